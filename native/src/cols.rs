//! Arrow-layout column builders: validity bitmaps (LSB first, 1 = valid), offsets and data
//! buffers that cross into Python without a copy (see `lib.rs`, `NativeBuf`).

/// A growable validity bitmap that remembers how many nulls it holds.
#[derive(Default)]
pub struct Bits {
    pub bytes: Vec<u8>,
    pub len: usize,
    pub unset: usize,
}

impl Bits {
    /// Append another bitmap's bits.
    pub fn append(&mut self, o: &Bits) {
        let sh = self.len % 8;
        if sh == 0 {
            self.bytes.truncate(self.len / 8);
            self.bytes.extend_from_slice(&o.bytes);
        } else {
            for &b in &o.bytes {
                let last = self.bytes.len() - 1;
                self.bytes[last] |= b << sh;
                self.bytes.push(b >> (8 - sh));
            }
        }
        self.len += o.len;
        self.unset += o.unset;
        self.bytes.truncate(self.len.div_ceil(8));
    }

    #[inline]
    pub fn push(&mut self, v: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if v {
            let last = self.bytes.len() - 1;
            self.bytes[last] |= 1 << (self.len % 8);
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }
}

/// Offsets of a string column: 32-bit (`string`) or 64-bit (`large_string`).
pub enum Offsets {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// A string column being built.
pub struct StrCol {
    pub offsets: Offsets,
    pub data: Vec<u8>,
    pub valid: Bits,
}

impl StrCol {
    pub fn new(large: bool, rows: usize, bytes: usize) -> Self {
        let offsets = if large {
            let mut v = Vec::with_capacity(rows + 1);
            v.push(0i64);
            Offsets::I64(v)
        } else {
            let mut v = Vec::with_capacity(rows + 1);
            v.push(0i32);
            Offsets::I32(v)
        };
        StrCol {
            offsets,
            data: Vec::with_capacity(bytes),
            valid: Bits::default(),
        }
    }

    #[inline]
    fn close(&mut self) {
        let n = self.data.len();
        match &mut self.offsets {
            Offsets::I32(v) => v.push(n as i32),
            Offsets::I64(v) => v.push(n as i64),
        }
    }

    #[inline]
    pub fn push(&mut self, s: &[u8]) {
        self.data.extend_from_slice(s);
        self.close();
        self.valid.push(true);
    }

    /// A value written by the caller into `data` already (e.g. decoded in place).
    #[inline]
    pub fn commit(&mut self) {
        self.close();
        self.valid.push(true);
    }

    #[inline]
    pub fn push_null(&mut self) {
        self.close();
        self.valid.push(false);
    }

    pub fn len(&self) -> usize {
        self.valid.len
    }

    /// The last value pushed (None: it is null, or nothing was pushed).
    pub fn last(&self) -> Option<&[u8]> {
        let n = self.valid.len;
        if n == 0 || self.valid.bytes[(n - 1) / 8] & (1 << ((n - 1) % 8)) == 0 {
            return None;
        }
        let (lo, hi) = match &self.offsets {
            Offsets::I32(v) => (v[n - 1] as usize, v[n] as usize),
            Offsets::I64(v) => (v[n - 1] as usize, v[n] as usize),
        };
        self.data.get(lo..hi)
    }

    pub fn is_empty(&self) -> bool {
        self.valid.len == 0
    }

    /// Append another column of the same offset width (values copied, offsets shifted).
    pub fn append(&mut self, o: &StrCol) {
        let base = self.data.len();
        self.data.extend_from_slice(&o.data);
        match (&mut self.offsets, &o.offsets) {
            (Offsets::I32(a), Offsets::I32(b)) => {
                a.extend(b[1..].iter().map(|&x| (x as i64 + base as i64) as i32))
            }
            (Offsets::I64(a), Offsets::I64(b)) => a.extend(b[1..].iter().map(|&x| x + base as i64)),
            _ => unreachable!("columns of one kind have one offset width"),
        }
        self.valid.append(&o.valid);
    }

    /// Push the last value again (a non-empty column).
    pub fn repeat_last(&mut self) {
        let (a, b) = match &self.offsets {
            Offsets::I32(v) => (v[v.len() - 2] as usize, v[v.len() - 1] as usize),
            Offsets::I64(v) => (v[v.len() - 2] as usize, v[v.len() - 1] as usize),
        };
        self.data.extend_from_within(a..b);
        self.commit();
    }

    /// True when the 32-bit offsets would overflow (the caller then bails).
    pub fn overflows(&self) -> bool {
        matches!(self.offsets, Offsets::I32(_)) && self.data.len() > i32::MAX as usize
    }
}

/// An int64 column being built.
#[derive(Default)]
pub struct I64Col {
    pub values: Vec<i64>,
    pub valid: Bits,
}

impl I64Col {
    /// With room for `rows` values (and their validity bits).
    pub fn with_capacity(rows: usize) -> Self {
        I64Col {
            values: Vec::with_capacity(rows),
            valid: Bits {
                bytes: Vec::with_capacity(rows.div_ceil(8)),
                len: 0,
                unset: 0,
            },
        }
    }

    #[inline]
    pub fn push(&mut self, v: Option<i64>) {
        self.values.push(v.unwrap_or(0));
        self.valid.push(v.is_some());
    }

    /// The value at `i` (None: null).
    #[inline]
    pub fn get(&self, i: usize) -> Option<i64> {
        (self.valid.bytes[i / 8] & (1 << (i % 8)) != 0).then(|| self.values[i])
    }

    pub fn append(&mut self, o: &I64Col) {
        self.values.extend_from_slice(&o.values);
        self.valid.append(&o.valid);
    }
}

/// A bool column without nulls.
#[derive(Default)]
pub struct BoolCol {
    pub values: Bits,
}

impl BoolCol {
    #[inline]
    pub fn push(&mut self, v: bool) {
        self.values.push(v);
    }
}

/// A float64 column being built.
#[derive(Default)]
pub struct F64Col {
    pub values: Vec<f64>,
    pub valid: Bits,
}

impl F64Col {
    #[inline]
    pub fn push(&mut self, v: Option<f64>) {
        self.values.push(v.unwrap_or(0.0));
        self.valid.push(v.is_some());
    }

    pub fn append(&mut self, o: &F64Col) {
        self.values.extend_from_slice(&o.values);
        self.valid.append(&o.valid);
    }
}

/// Ask the kernel to back a large buffer's reserved capacity with transparent huge pages
/// (where THP is in `madvise` mode, fewer page faults while it fills); a hint only, a no-op
/// off Linux, for small buffers, or when refused.
pub fn huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MIN: usize = 4 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < MIN {
            return;
        }
        let start = v.as_ptr() as usize;
        let aligned = start.div_ceil(PAGE) * PAGE;
        let end = (start + bytes) / PAGE * PAGE;
        if end > aligned {
            // SAFETY: the range lies inside the vector's own allocation; MADV_HUGEPAGE only
            // changes how the kernel backs it, never its contents
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
