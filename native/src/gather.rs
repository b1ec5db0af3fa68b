//! Gather (Arrow's `take`) of a chunked column into one array, on several threads: the pleach
//! loader's last step, which puts every column of the rows read block by block into run order
//! (`replaykit.io.pleach._finish`).
//!
//! A column is given as its chunks (Arrow layout: an optional validity bitmap, and the values
//! or the offsets plus data); `order` holds row numbers over the chunks one after the other.
//! Variable-width values are copied in two passes: the output offsets first (one pass over
//! `order`), then the bytes, each thread filling its own range of the output. Every index and
//! offset is checked: bad input is an `Err`, never a read out of bounds.

/// One chunk of a column: `len` rows starting at row `offset` of its buffers.
#[derive(Clone, Copy)]
pub struct Chunk<'a> {
    pub offset: usize,
    pub len: usize,
    /// validity bitmap (LSB first, 1 = valid), None when every row is valid
    pub valid: Option<&'a [u8]>,
    /// values (fixed width, bool bitmap) or offsets (strings)
    pub b1: &'a [u8],
    /// data (strings), empty otherwise
    pub b2: &'a [u8],
}

/// The layout of a column.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Layout {
    /// 32-bit offsets (`string`, `binary`)
    Str32,
    /// 64-bit offsets (`large_string`, `large_binary`)
    Str64,
    /// fixed-width values of this many bytes
    Fixed(usize),
    /// bit-packed booleans
    Bool,
}

/// The gathered column.
pub struct Gathered {
    pub len: usize,
    pub nulls: usize,
    /// validity bitmap, None when no row is null
    pub valid: Option<Vec<u8>>,
    pub values: Values,
}

pub enum Values {
    Str32(Vec<i32>, Vec<u8>),
    Str64(Vec<i64>, Vec<u8>),
    /// fixed-width values or a bool bitmap
    Bytes(Vec<u8>),
}

#[inline]
fn bit(bits: &[u8], i: usize) -> bool {
    bits[i >> 3] & (1 << (i & 7)) != 0
}

/// Where a row of the concatenated chunks lives: (chunk, row within the chunk's buffers).
struct Locator {
    /// first row of each chunk, and the total at the end
    starts: Vec<usize>,
}

impl Locator {
    fn new(chunks: &[Chunk<'_>]) -> Self {
        let mut starts = Vec::with_capacity(chunks.len() + 1);
        let mut at = 0usize;
        starts.push(0);
        for c in chunks {
            at += c.len;
            starts.push(at);
        }
        Locator { starts }
    }

    fn total(&self) -> usize {
        *self.starts.last().unwrap_or(&0)
    }

    /// The chunk of global row `r` (< total), trying `hint` first (orders come in runs).
    #[inline]
    fn chunk(&self, r: usize, hint: usize) -> usize {
        if hint + 1 < self.starts.len() && self.starts[hint] <= r && r < self.starts[hint + 1] {
            return hint;
        }
        self.starts.partition_point(|&s| s <= r) - 1
    }
}

fn threads_for(n: usize, threads: usize) -> usize {
    if n < 65536 {
        1
    } else {
        crate::par::resolve(threads)
    }
}

/// A chunk's string offsets as integers (the buffer viewed in place when it is aligned).
enum Offs<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
    Owned(Vec<i64>),
}

impl Offs<'_> {
    #[inline]
    fn get(&self, i: usize) -> usize {
        match self {
            Offs::I32(v) => v[i] as usize,
            Offs::I64(v) => v[i] as usize,
            Offs::Owned(v) => v[i] as usize,
        }
    }

    fn raw(&self, i: usize) -> Option<i64> {
        match self {
            Offs::I32(v) => v.get(i).map(|&x| x as i64),
            Offs::I64(v) => v.get(i).copied(),
            Offs::Owned(v) => v.get(i).copied(),
        }
    }
}

fn offsets_of(layout: Layout, b1: &[u8]) -> Offs<'_> {
    if layout == Layout::Str32 {
        let b1 = &b1[..b1.len() / 4 * 4];
        // SAFETY: every bit pattern is a valid i32
        let (pre, mid, post) = unsafe { b1.align_to::<i32>() };
        if pre.is_empty() && post.is_empty() {
            return Offs::I32(mid);
        }
        let v = b1.chunks_exact(4);
        return Offs::Owned(
            v.map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as i64)
                .collect(),
        );
    }
    let b1 = &b1[..b1.len() / 8 * 8];
    // SAFETY: every bit pattern is a valid i64
    let (pre, mid, post) = unsafe { b1.align_to::<i64>() };
    if pre.is_empty() && post.is_empty() {
        return Offs::I64(mid);
    }
    Offs::Owned(
        b1.chunks_exact(8)
            .map(|b| i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect(),
    )
}

/// Check the chunks' buffers against their layout (sizes; string offsets ascending within
/// the data), so the copy below cannot read out of bounds; the string offsets of each chunk.
fn check<'a>(layout: Layout, chunks: &[Chunk<'a>]) -> Result<Vec<Offs<'a>>, String> {
    let mut out = Vec::new();
    for c in chunks {
        let end = c.offset.checked_add(c.len).ok_or("chunk too long")?;
        if let Some(v) = c.valid {
            if v.len() * 8 < end {
                return Err("validity bitmap too short".into());
            }
        }
        match layout {
            Layout::Str32 | Layout::Str64 => {
                let offs = offsets_of(layout, c.b1);
                let mut lo = offs.raw(c.offset).ok_or("offsets buffer too short")?;
                if lo < 0 {
                    return Err("negative offset".into());
                }
                for i in c.offset + 1..=end {
                    let hi = offs.raw(i).ok_or("offsets buffer too short")?;
                    if hi < lo || hi as u64 > c.b2.len() as u64 {
                        return Err(format!("offset {i} out of order or beyond the data"));
                    }
                    lo = hi;
                }
                out.push(offs);
            }
            Layout::Fixed(w) => {
                if w == 0 || c.b1.len() < end.checked_mul(w).ok_or("chunk too long")? {
                    return Err("values buffer too short".into());
                }
            }
            Layout::Bool => {
                if c.b1.len() * 8 < end {
                    return Err("values bitmap too short".into());
                }
            }
        }
    }
    Ok(out)
}

/// Gather `order` (global row numbers over `chunks`) of a column into one array, on up to
/// `threads` threads.
pub fn take(
    layout: Layout,
    chunks: &[Chunk<'_>],
    order: &[i64],
    threads: usize,
) -> Result<Gathered, String> {
    take_with(layout, chunks, order, None, threads)
}

/// Where output row `k` comes from: (chunk, row in its buffers).
struct Loc<'a, 'b> {
    /// the precomputed locations (see [`locations`]), if any
    locs: Option<&'a [u64]>,
    order: &'a [i64],
    loc: &'a Locator,
    chunks: &'a [Chunk<'b>],
    /// one chunk: its row offset
    single: Option<usize>,
}

impl Loc<'_, '_> {
    #[inline(always)]
    fn at(&self, k: usize, hint: &mut usize) -> (usize, usize) {
        if let Some(off) = self.single {
            return (0, off + self.order[k] as usize);
        }
        if let Some(l) = self.locs {
            let c = (l[k] >> 40) as usize;
            return (c, self.chunks[c].offset + (l[k] & ((1 << 40) - 1)) as usize);
        }
        let r = self.order[k] as usize;
        *hint = self.loc.chunk(r, *hint);
        (
            *hint,
            self.chunks[*hint].offset + (r - self.loc.starts[*hint]),
        )
    }
}

/// `(chunk << 40) | row in the chunk` of each row of `order` over chunks of these lengths
/// (shared by the columns of one chunking); None when an index is out of range.
fn locations(lens: &[usize], order: &[i64]) -> Option<Vec<u64>> {
    let mut starts = Vec::with_capacity(lens.len() + 1);
    let mut at = 0usize;
    starts.push(0usize);
    for &l in lens {
        at += l;
        starts.push(at);
    }
    let loc = Locator { starts };
    let total = loc.total();
    let mut h = 0usize;
    let mut out = Vec::with_capacity(order.len());
    for &r in order {
        if r < 0 || r as u64 >= total as u64 || lens.len() >= 1 << 23 {
            return None;
        }
        let r = r as usize;
        h = loc.chunk(r, h);
        out.push(((h as u64) << 40) | (r - loc.starts[h]) as u64);
    }
    Some(out)
}

fn take_with(
    layout: Layout,
    chunks: &[Chunk<'_>],
    order: &[i64],
    locs: Option<&[u64]>,
    threads: usize,
) -> Result<Gathered, String> {
    let n = order.len();
    let offsets = check_on(layout, chunks, threads_for(n, threads))?;
    let offsets = &offsets;
    let loc = Locator::new(chunks);
    let total = loc.total();
    // every index checked once; rows are then located chunk by chunk (orders come in runs)
    if let Some(&r) = order.iter().find(|&&r| r < 0 || r as u64 >= total as u64) {
        return Err(format!("index {r} beyond the column's {total} rows"));
    }
    let loc = &loc;
    if let Some(l) = locs {
        if l.len() != n {
            return Err("locations do not match the order".into());
        }
    }
    let locate = Loc {
        locs,
        order,
        loc,
        chunks,
        single: (chunks.len() == 1).then(|| chunks[0].offset),
    };
    let locate = &locate;
    let t = threads_for(n, threads);
    let ranges = byte_ranges(n, t);
    // validity: each range of whole bitmap bytes on its own
    let any_nulls = chunks.iter().any(|c| c.valid.is_some());
    let mut nulls = 0usize;
    let valid = if any_nulls {
        let mut bits = vec![0u8; n.div_ceil(8)];
        let mut tasks: Vec<(usize, usize, &mut [u8])> = Vec::with_capacity(ranges.len());
        let mut rest = bits.as_mut_slice();
        for &(lo, hi) in &ranges {
            let (v, tail) = rest.split_at_mut(hi.div_ceil(8) - lo / 8);
            tasks.push((lo, hi, v));
            rest = tail;
        }
        let missing = std::sync::atomic::AtomicUsize::new(0);
        crate::par::run_tasks(tasks, t, |(lo, hi, v)| {
            let mut h = 0usize;
            let mut m = 0usize;
            for k in lo..hi {
                let (c, i) = locate.at(k, &mut h);
                if chunks[c].valid.is_none_or(|bm| bit(bm, i)) {
                    let j = k - lo;
                    v[j >> 3] |= 1 << (j & 7);
                } else {
                    m += 1;
                }
            }
            missing.fetch_add(m, std::sync::atomic::Ordering::Relaxed);
        });
        nulls = missing.into_inner();
        (nulls > 0).then_some(bits)
    } else {
        None
    };
    let values = match layout {
        Layout::Str32 | Layout::Str64 => {
            // output offsets: each range's bytes summed, then each range's offsets written
            // from its start (two passes over the ranges, in parallel)
            let sums = crate::par::map_ranges(&ranges, t, |lo, hi| {
                let mut h = 0usize;
                let mut size = 0usize;
                for k in lo..hi {
                    let (c, i) = locate.at(k, &mut h);
                    size += offsets[c].get(i + 1) - offsets[c].get(i);
                }
                size
            });
            let mut offs: Vec<usize> = vec![0; n + 1];
            let mut size = 0usize;
            {
                let mut tasks: Vec<(usize, usize, usize, &mut [usize])> =
                    Vec::with_capacity(ranges.len());
                let mut rest = &mut offs[1..];
                for (&(lo, hi), &s) in ranges.iter().zip(&sums) {
                    let (o, tail) = rest.split_at_mut(hi - lo);
                    tasks.push((lo, hi, size, o));
                    rest = tail;
                    size += s;
                }
                crate::par::run_tasks(tasks, t, |(lo, hi, base, o)| {
                    let mut h = 0usize;
                    let mut at = base;
                    for k in lo..hi {
                        let (c, i) = locate.at(k, &mut h);
                        at += offsets[c].get(i + 1) - offsets[c].get(i);
                        o[k - lo] = at;
                    }
                });
            }
            if layout == Layout::Str32 && size > i32::MAX as usize {
                return Err("string data beyond 2 GB: use large offsets".into());
            }
            // bytes: ranges of rows cut by output bytes, several per thread, each writing
            // its own part of the output
            let mut data = vec![0u8; size];
            let k = if t <= 1 {
                1
            } else {
                t * crate::par::CHUNKS_PER_THREAD
            };
            let mut parts: Vec<(usize, usize, &mut [u8])> = Vec::with_capacity(k);
            let mut rest: &mut [u8] = &mut data;
            let mut row = 0usize;
            for j in 1..=k {
                let hi = if j == k {
                    n
                } else {
                    offs.partition_point(|&o| o < size * j / k).clamp(row, n)
                };
                if hi == row {
                    continue;
                }
                let (head, tail) = rest.split_at_mut(offs[hi] - offs[row]);
                parts.push((row, hi, head));
                rest = tail;
                row = hi;
            }
            let offs = &offs;
            let copy = |(lo, hi, out): (usize, usize, &mut [u8])| -> Result<(), String> {
                let base = offs[lo];
                let mut h = 0usize;
                for k in lo..hi {
                    let (c, i) = locate.at(k, &mut h);
                    let s = offsets[c].get(i);
                    let len = offs[k + 1] - offs[k];
                    let src = chunks[c]
                        .b2
                        .get(s..s + len)
                        .ok_or("offset beyond the data")?;
                    out[offs[k] - base..offs[k + 1] - base].copy_from_slice(src);
                }
                Ok(())
            };
            run_parts(parts, t, copy)?;
            match layout {
                Layout::Str32 => Values::Str32(offs.iter().map(|&o| o as i32).collect(), data),
                _ => Values::Str64(offs.iter().map(|&o| o as i64).collect(), data),
            }
        }
        Layout::Fixed(w) => {
            let mut vals = vec![0u8; n * w];
            let k = if t <= 1 {
                1
            } else {
                t * crate::par::CHUNKS_PER_THREAD
            };
            let per = n.div_ceil(k).max(1);
            let parts: Vec<(usize, usize, &mut [u8])> = vals
                .chunks_mut(per * w)
                .enumerate()
                .map(|(j, out)| (j * per, (j * per + out.len() / w).min(n), out))
                .collect();
            fn copy<const W: usize>(
                out: &mut [u8],
                lo: usize,
                hi: usize,
                chunks: &[Chunk<'_>],
                locate: &Loc<'_, '_>,
            ) {
                let mut h = 0usize;
                for (k, o) in (lo..hi).zip(out.chunks_exact_mut(W)) {
                    let (c, i) = locate.at(k, &mut h);
                    let mut v = [0u8; W];
                    v.copy_from_slice(&chunks[c].b1[i * W..(i + 1) * W]);
                    o.copy_from_slice(&v);
                }
            }
            run_parts(parts, t, |(lo, hi, out): (usize, usize, &mut [u8])| {
                match w {
                    1 => copy::<1>(out, lo, hi, chunks, locate),
                    2 => copy::<2>(out, lo, hi, chunks, locate),
                    4 => copy::<4>(out, lo, hi, chunks, locate),
                    8 => copy::<8>(out, lo, hi, chunks, locate),
                    _ => {
                        let mut h = 0usize;
                        for k in lo..hi {
                            let (c, i) = locate.at(k, &mut h);
                            let src = &chunks[c].b1[i * w..(i + 1) * w];
                            out[(k - lo) * w..(k - lo + 1) * w].copy_from_slice(src);
                        }
                    }
                }
                Ok(())
            })?;
            Values::Bytes(vals)
        }
        Layout::Bool => {
            let mut bits = vec![0u8; n.div_ceil(8)];
            let mut h = 0usize;
            for k in 0..n {
                let (c, i) = locate.at(k, &mut h);
                if bit(chunks[c].b1, i) {
                    bits[k >> 3] |= 1 << (k & 7);
                }
            }
            Values::Bytes(bits)
        }
    };
    Ok(Gathered {
        len: n,
        nulls,
        valid,
        values,
    })
}

/// [`take`] of several columns in one order: a single column on `threads` threads, several
/// spread over `threads` threads (one column at a time each), results in column order.
pub fn take_many(
    cols: &[(Layout, Vec<Chunk<'_>>)],
    order: &[i64],
    threads: usize,
) -> Result<Vec<Gathered>, String> {
    let t = crate::par::resolve(threads).min(cols.len().max(1));
    if t <= 1 || cols.len() <= 1 {
        return cols
            .iter()
            .map(|(l, c)| take(*l, c, order, threads))
            .collect();
    }
    // the rows' locations once per chunking (most columns share one)
    let mut shapes: Vec<(Vec<usize>, Option<Vec<u64>>)> = Vec::new();
    let mut shape_of: Vec<usize> = Vec::with_capacity(cols.len());
    for (_, c) in cols {
        let lens: Vec<usize> = c.iter().map(|ch| ch.len).collect();
        let k = match shapes.iter().position(|(l, _)| *l == lens) {
            Some(k) => k,
            None => {
                let locs = locations(&lens, order);
                shapes.push((lens, locs));
                shapes.len() - 1
            }
        };
        shape_of.push(k);
    }
    let (shapes, shape_of) = (&shapes, &shape_of);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<std::sync::Mutex<Option<Result<Gathered, String>>>> =
        cols.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..t {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((l, c)) = cols.get(k) else { break };
                let locs = shapes[shape_of[k]].1.as_deref();
                let r = take_with(*l, c, order, locs, 1);
                if let Ok(mut slot) = done[k].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    done.into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err("a gather thread failed".into()))
        })
        .collect()
}

/// What [`scatter`] needs to copy a string column into `order`: the output offsets (n + 1),
/// the output byte position of each source row (-1: not taken), and the output validity.
pub struct Plan {
    pub offsets: Vec<i64>,
    pub dest: Vec<i64>,
    pub valid: Option<Vec<u8>>,
    pub nulls: usize,
}

/// The [`Plan`] of gathering `order` (global row numbers over `chunks`, none repeated) of a
/// string column, on the core's thread count ([`crate::par::threads`]).
pub fn plan(layout: Layout, chunks: &[Chunk<'_>], order: &[i64]) -> Result<Plan, String> {
    plan_with(layout, chunks, order, 0)
}

/// [`plan`] on up to `threads` threads (0: the core's count). `order` is cut into ranges of
/// whole bytes of the validity bitmap, several per thread: a first pass checks each range's
/// rows and sums their lengths, and a second writes each range's output offsets, validity and
/// its rows' destinations (each row's slot is claimed by an atomic swap, so a repeated row is
/// an error whichever range meets it first). The same plan on any thread count.
pub fn plan_with(
    layout: Layout,
    chunks: &[Chunk<'_>],
    order: &[i64],
    threads: usize,
) -> Result<Plan, String> {
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
    const _: () = assert!(std::mem::align_of::<AtomicI64>() == std::mem::align_of::<i64>());
    if !matches!(layout, Layout::Str32 | Layout::Str64) {
        return Err("plan of a string column".into());
    }
    let n = order.len();
    let t = threads_for(n, threads);
    let offsets = check_on(layout, chunks, t)?;
    let offsets = &offsets;
    let loc = Locator::new(chunks);
    let total = loc.total();
    let locate = Loc {
        locs: None,
        order,
        loc: &loc,
        chunks,
        single: (chunks.len() == 1).then(|| chunks[0].offset),
    };
    let locate = &locate;
    let ranges = byte_ranges(n, t);
    // pass 1: every index in range, and the bytes of each range's rows
    let sizes = crate::par::map_ranges(&ranges, t, |lo, hi| -> Result<i64, String> {
        let part = &order[lo..hi];
        if let Some(&r) = part.iter().find(|&&r| r < 0 || r as u64 >= total as u64) {
            return Err(format!("index {r} beyond the column's {total} rows"));
        }
        let mut h = 0usize;
        let mut size = 0i64;
        for k in lo..hi {
            let (c, i) = locate.at(k, &mut h);
            size += (offsets[c].get(i + 1) - offsets[c].get(i)) as i64;
        }
        Ok(size)
    });
    let mut base = Vec::with_capacity(ranges.len());
    let mut size = 0i64;
    for s in sizes {
        base.push(size);
        size += s?;
    }
    // pass 2: offsets, destinations and validity, each range into its own part
    let mut out = vec![0i64; n + 1];
    let mut dest = vec![-1i64; total];
    // SAFETY: AtomicI64 has the size and (asserted above) the alignment of i64; `dest` is
    // only accessed through this view until the view is dropped below
    let slots: &[AtomicI64] =
        unsafe { &*(dest.as_mut_slice() as *mut [i64] as *const [AtomicI64]) };
    let with_valid = chunks.iter().any(|c| c.valid.is_some());
    let mut bits = vec![0u8; if with_valid { n.div_ceil(8) } else { 0 }];
    let nulls = AtomicUsize::new(0);
    let twice = AtomicI64::new(-1);
    {
        let mut tasks: Vec<PlanPart<'_>> = Vec::with_capacity(ranges.len());
        let (mut out_rest, mut bit_rest) = (&mut out[1..], bits.as_mut_slice());
        for (&(lo, hi), &b) in ranges.iter().zip(&base) {
            let (o, ot) = out_rest.split_at_mut(hi - lo);
            let nb = if with_valid {
                hi.div_ceil(8) - lo / 8
            } else {
                0
            };
            let (v, vt) = bit_rest.split_at_mut(nb);
            tasks.push((lo, hi, b, o, v));
            out_rest = ot;
            bit_rest = vt;
        }
        crate::par::run_tasks(tasks, t, |(lo, hi, b, o, v)| {
            let mut h = 0usize;
            let mut size = b;
            let mut missing = 0usize;
            for k in lo..hi {
                let (c, i) = locate.at(k, &mut h);
                let r = order[k];
                if slots[r as usize].swap(size, Ordering::Relaxed) >= 0 {
                    twice.store(r, Ordering::Relaxed);
                }
                size += (offsets[c].get(i + 1) - offsets[c].get(i)) as i64;
                o[k - lo] = size;
                if with_valid {
                    if chunks[c].valid.is_none_or(|bm| bit(bm, i)) {
                        let j = k - lo / 8 * 8;
                        v[j >> 3] |= 1 << (j & 7);
                    } else {
                        missing += 1;
                    }
                }
            }
            nulls.fetch_add(missing, Ordering::Relaxed);
        });
    }
    let r = twice.load(Ordering::Relaxed);
    if r >= 0 {
        return Err(format!("row {r} is taken twice"));
    }
    let nulls = nulls.into_inner();
    Ok(Plan {
        offsets: out,
        dest,
        valid: (nulls > 0).then_some(bits),
        nulls,
    })
}

/// A range of [`plan_with`]'s rows: (first, end, bytes before it, its output offsets, its
/// validity bytes).
type PlanPart<'a> = (usize, usize, i64, &'a mut [i64], &'a mut [u8]);

/// `0..n` cut into ranges for [`plan_with`]: about [`crate::par::CHUNKS_PER_THREAD`] per
/// thread, each starting at a multiple of 8 (a whole byte of a validity bitmap).
fn byte_ranges(n: usize, threads: usize) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (lo, hi) in crate::par::ranges(n, threads, 8192) {
        let (lo, hi) = (lo / 8 * 8, if hi == n { n } else { hi / 8 * 8 });
        match out.last_mut() {
            Some(last) if lo < last.1 || hi <= lo => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// [`check`] of the chunks, spread over up to `threads` threads (one chunk at a time each).
fn check_on<'a>(
    layout: Layout,
    chunks: &[Chunk<'a>],
    threads: usize,
) -> Result<Vec<Offs<'a>>, String> {
    if threads <= 1 || chunks.len() <= 1 {
        return check(layout, chunks);
    }
    let ranges: Vec<(usize, usize)> = (0..chunks.len()).map(|k| (k, k + 1)).collect();
    let got = crate::par::map_ranges(&ranges, threads, |a, b| check(layout, &chunks[a..b]));
    let mut out = Vec::with_capacity(chunks.len());
    for g in got {
        out.extend(g?);
    }
    Ok(out)
}

/// Copy each row of a string chunk to its place in `out`: row `i` of the chunk (row
/// `chunk.offset + i` of its buffers) to `out[dest[i]..]`, rows with `dest[i] < 0` skipped.
/// `splits` (ascending byte positions of `out`, row boundaries of the output) cut `out`
/// into ranges, one thread each; a row must lie inside one range. The pleach loader copies
/// a large column into run order chunk by chunk this way, freeing each source chunk once
/// copied (`replaykit._base.native.take_freeing`).
pub fn scatter(
    layout: Layout,
    chunk: &Chunk<'_>,
    dest: &[i64],
    out: &mut [u8],
    splits: &[usize],
) -> Result<(), String> {
    if !matches!(layout, Layout::Str32 | Layout::Str64) {
        return Err("scatter copies string columns".into());
    }
    let offsets = check(layout, std::slice::from_ref(chunk))?;
    let offs = &offsets[0];
    if dest.len() != chunk.len {
        return Err("one destination per row".into());
    }
    let mut bounds = vec![0usize];
    for &s in splits {
        if s < *bounds.last().unwrap_or(&0) || s > out.len() {
            return Err("splits out of order".into());
        }
        bounds.push(s);
    }
    bounds.push(out.len());
    let mut parts: Vec<(usize, usize, &mut [u8])> = Vec::with_capacity(bounds.len() - 1);
    let mut rest: &mut [u8] = out;
    for w in bounds.windows(2) {
        let (head, tail) = rest.split_at_mut(w[1] - w[0]);
        parts.push((w[0], w[1], head));
        rest = tail;
    }
    let t = parts.len();
    run_parts(parts, t, |(lo, hi, part): (usize, usize, &mut [u8])| {
        for (i, &d) in dest.iter().enumerate() {
            if d < 0 || (d as u64) < lo as u64 || d as u64 >= hi as u64 {
                // another thread's range (or skipped); an empty row at `hi` is nobody's
                continue;
            }
            let d = d as usize;
            let r = chunk.offset + i;
            let (s, e) = (offs.get(r), offs.get(r + 1));
            if d + (e - s) > hi {
                return Err("a row crosses a split or the end of the output".into());
            }
            part[d - lo..d - lo + (e - s)].copy_from_slice(&chunk.b2[s..e]);
        }
        Ok(())
    })
}

/// Run `f` on every part on up to `threads` threads (this one included), each taking the
/// next part when it finishes one; the first error, if any.
fn run_parts<'a>(
    parts: Vec<(usize, usize, &'a mut [u8])>,
    threads: usize,
    f: impl Fn((usize, usize, &'a mut [u8])) -> Result<(), String> + Sync,
) -> Result<(), String> {
    if parts.len() <= 1 || threads <= 1 {
        return parts.into_iter().try_for_each(&f);
    }
    let first: std::sync::Mutex<Result<(), String>> = std::sync::Mutex::new(Ok(()));
    crate::par::run_tasks(parts, threads, |p| {
        let r = f(p);
        if let Err(e) = r {
            let mut slot = first.lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_ok() {
                *slot = Err(e);
            }
        }
    });
    first.into_inner().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spans_of;

    fn strs(g: &Gathered) -> Vec<Option<String>> {
        let (offs, data): (Vec<usize>, &[u8]) = match &g.values {
            Values::Str32(o, d) => (o.iter().map(|&x| x as usize).collect(), d),
            Values::Str64(o, d) => (o.iter().map(|&x| x as usize).collect(), d),
            Values::Bytes(_) => panic!("not strings"),
        };
        (0..g.len)
            .map(|k| {
                let ok = g.valid.as_ref().is_none_or(|v| bit(v, k));
                ok.then(|| String::from_utf8(data[offs[k]..offs[k + 1]].to_vec()).unwrap())
            })
            .collect()
    }

    #[test]
    fn strings_over_chunks_with_nulls() {
        let (o1, d1) = spans_of(&["a", "bb", "ccc"]);
        let (o2, d2) = spans_of(&["", "dddd"]);
        let v2 = [0b10u8]; // row 0 of chunk 2 is null
        let chunks = [
            Chunk {
                offset: 0,
                len: 3,
                valid: None,
                b1: &o1,
                b2: &d1,
            },
            Chunk {
                offset: 0,
                len: 2,
                valid: Some(&v2),
                b1: &o2,
                b2: &d2,
            },
        ];
        let g = take(Layout::Str64, &chunks, &[4, 0, 3, 2, 2, 1], 2).unwrap();
        assert_eq!(g.nulls, 1);
        assert_eq!(
            strs(&g),
            vec![
                Some("dddd".into()),
                Some("a".into()),
                None,
                Some("ccc".into()),
                Some("ccc".into()),
                Some("bb".into())
            ]
        );
        assert!(take(Layout::Str64, &chunks, &[5], 1).is_err());
        assert!(take(Layout::Str64, &chunks, &[-1], 1).is_err());
    }

    #[test]
    fn sliced_chunks_fixed_and_bool() {
        let vals: Vec<u8> = (0..10i64).flat_map(|v| v.to_ne_bytes()).collect();
        let chunks = [Chunk {
            offset: 2,
            len: 5,
            valid: None,
            b1: &vals,
            b2: &[],
        }];
        let g = take(Layout::Fixed(8), &chunks, &[4, 0], 1).unwrap();
        let Values::Bytes(b) = g.values else { panic!() };
        assert_eq!(b, [6i64.to_ne_bytes(), 2i64.to_ne_bytes()].concat());
        let bits = [0b0000_0101u8];
        let chunks = [Chunk {
            offset: 1,
            len: 3,
            valid: None,
            b1: &bits,
            b2: &[],
        }];
        let g = take(Layout::Bool, &chunks, &[1, 0, 2], 1).unwrap();
        let Values::Bytes(b) = g.values else { panic!() };
        assert_eq!(b, vec![0b001]);
    }

    #[test]
    fn many_rows_on_threads_match_one_thread() {
        let items: Vec<String> = (0..100_000).map(|i| format!("v{}", i % 977)).collect();
        let refs: Vec<&str> = items.iter().map(|s| s.as_str()).collect();
        let (o, d) = spans_of(&refs);
        let chunks = [Chunk {
            offset: 0,
            len: refs.len(),
            valid: None,
            b1: &o,
            b2: &d,
        }];
        let order: Vec<i64> = (0..100_000i64).rev().collect();
        let a = take(Layout::Str64, &chunks, &order, 1).unwrap();
        let b = take(Layout::Str64, &chunks, &order, 3).unwrap();
        assert_eq!(strs(&a), strs(&b));
        assert_eq!(strs(&a)[0].as_deref(), Some(refs[99_999]));
    }

    #[test]
    fn plan_and_take_with_nulls_over_chunks_match_one_thread() {
        // 3 chunks (the middle one sliced and with nulls), 150,001 rows: the parallel
        // offsets, validity and destinations equal the serial ones, bit for bit
        let items: Vec<String> = (0..150_001).map(|i| "x".repeat(i % 13)).collect();
        let refs: Vec<&str> = items.iter().map(|s| s.as_str()).collect();
        let (o1, d1) = spans_of(&refs[..40_000]);
        let (o2, d2) = spans_of(&refs[39_995..100_000]);
        let (o3, d3) = spans_of(&refs[100_000..]);
        let v2: Vec<u8> = (0..(60_005usize).div_ceil(8))
            .map(|i| if i % 7 == 3 { 0b1011_0111 } else { 0xff })
            .collect();
        let chunks = [
            Chunk {
                offset: 0,
                len: 40_000,
                valid: None,
                b1: &o1,
                b2: &d1,
            },
            Chunk {
                offset: 5,
                len: 60_000,
                valid: Some(&v2),
                b1: &o2,
                b2: &d2,
            },
            Chunk {
                offset: 0,
                len: 50_001,
                valid: None,
                b1: &o3,
                b2: &d3,
            },
        ];
        // a permutation in runs (as a sort's order of a log file), reversed in places
        let mut order: Vec<i64> = (0..150_001i64).collect();
        for run in order.chunks_mut(997).step_by(3) {
            run.reverse();
        }
        order.rotate_left(12_345);
        let one = plan_with(Layout::Str64, &chunks, &order, 1).unwrap();
        for t in [2, 3, 8] {
            let p = plan_with(Layout::Str64, &chunks, &order, t).unwrap();
            assert_eq!(p.offsets, one.offsets);
            assert_eq!(p.dest, one.dest);
            assert_eq!((p.nulls, &p.valid), (one.nulls, &one.valid));
            let a = take(Layout::Str64, &chunks, &order, 1).unwrap();
            let b = take(Layout::Str64, &chunks, &order, t).unwrap();
            assert_eq!(strs(&a), strs(&b));
            assert_eq!((a.nulls, &a.valid), (b.nulls, &b.valid));
            assert_eq!((a.nulls, &a.valid), (one.nulls, &one.valid));
        }
        assert!(one.nulls > 0);
        // a row taken twice, or out of range, is an error on any count
        let mut twice = order.clone();
        twice[140_000] = twice[3];
        let mut beyond = order.clone();
        beyond[100_000] = 150_001;
        for t in [1, 2, 8] {
            assert!(plan_with(Layout::Str64, &chunks, &twice, t).is_err());
            assert!(plan_with(Layout::Str64, &chunks, &beyond, t).is_err());
        }
    }

    #[test]
    fn take_many_shares_locations_and_matches_take() {
        let vals: Vec<u8> = (0..200_000i64).flat_map(|v| v.to_ne_bytes()).collect();
        let one = vec![Chunk {
            offset: 0,
            len: 200_000,
            valid: None,
            b1: &vals,
            b2: &[],
        }];
        let two = vec![
            Chunk {
                offset: 3,
                len: 100_000,
                valid: None,
                b1: &vals,
                b2: &[],
            },
            Chunk {
                offset: 0,
                len: 100_000,
                valid: None,
                b1: &vals,
                b2: &[],
            },
        ];
        let cols = vec![
            (Layout::Fixed(8), one.clone()),
            (Layout::Fixed(8), two.clone()),
            (Layout::Fixed(4), two.clone()),
        ];
        let order: Vec<i64> = (0..200_000i64).map(|i| (i * 7919) % 200_000).collect();
        let many = take_many(&cols, &order, 2).unwrap();
        for ((l, c), g) in cols.iter().zip(&many) {
            let (Values::Bytes(a), Values::Bytes(b)) =
                (&g.values, &take(*l, c, &order, 1).unwrap().values)
            else {
                panic!()
            };
            assert_eq!(a, b);
        }
        assert!(take_many(&cols, &[200_000], 2).is_err());
    }

    #[test]
    fn scatter_puts_rows_in_place() {
        let (o, d) = spans_of(&["aa", "b", "", "cccc"]);
        let ch = Chunk {
            offset: 1,
            len: 3,
            valid: None,
            b1: &o,
            b2: &d,
        };
        // rows "b", "", "cccc" to positions 4, skipped, 0
        let mut out = vec![b'.'; 5];
        scatter(Layout::Str64, &ch, &[4, -1, 0], &mut out, &[4]).unwrap();
        assert_eq!(&out, b"ccccb");
        let mut out = vec![b'.'; 5];
        assert!(scatter(Layout::Str64, &ch, &[4, -1, 0], &mut out, &[2]).is_err());
        assert!(scatter(Layout::Str64, &ch, &[4, -1, 2], &mut out, &[]).is_err());
        assert!(scatter(Layout::Str64, &ch, &[4, -1], &mut out, &[]).is_err());
    }

    #[test]
    fn plan_of_a_permutation() {
        let (o1, d1) = spans_of(&["aa", "b"]);
        let (o2, d2) = spans_of(&["", "cccc"]);
        let v2 = [0b10u8];
        let chunks = [
            Chunk {
                offset: 0,
                len: 2,
                valid: None,
                b1: &o1,
                b2: &d1,
            },
            Chunk {
                offset: 0,
                len: 2,
                valid: Some(&v2),
                b1: &o2,
                b2: &d2,
            },
        ];
        let p = plan(Layout::Str64, &chunks, &[3, 0, 2]).unwrap();
        assert_eq!(p.offsets, vec![0, 4, 6, 6]);
        assert_eq!(p.dest, vec![4, -1, 6, 0]);
        assert_eq!((p.nulls, p.valid), (1, Some(vec![0b011])));
        assert!(plan(Layout::Str64, &chunks, &[3, 3]).is_err());
        assert!(plan(Layout::Str64, &chunks, &[4]).is_err());
    }

    #[test]
    fn bad_offsets_are_errors() {
        let o: Vec<u8> = [0i64, 5, 2].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let chunks = [Chunk {
            offset: 0,
            len: 2,
            valid: None,
            b1: &o,
            b2: b"abcde",
        }];
        assert!(take(Layout::Str64, &chunks, &[0], 1).is_err());
    }
}
