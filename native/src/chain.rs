//! The hash chain's row content and digests in one pass (`replaykit.integrity`).
//!
//! A row's canonical content bytes (`integrity.row_content`) are a fixed sequence of pieces:
//! literal key text, and each hashed column's value as canonical JSON (a string quoted with
//! RFC 8785 escapes, an integer in decimal, a boolean, `null`; the payload verbatim). The
//! Python side describes that sequence once per block ([`Piece`]s, built by
//! `integrity._chain_pieces`); [`digests`] writes each row's content into one reused buffer
//! and hashes `prev || content`, so the content column never exists. Verification hashes
//! rows independently (on several threads); stamping chains each row to the one before.

use sha2::{Digest, Sha256};

/// The n + 1 offsets of a string column, read from the bytes of an int64 buffer.
#[derive(Clone, Copy)]
pub struct Spans<'a> {
    pub offs: &'a [u8],
    pub data: &'a [u8],
}

impl<'a> Spans<'a> {
    #[inline]
    fn off(&self, i: usize) -> usize {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.offs[8 * i..8 * i + 8]);
        i64::from_ne_bytes(b) as usize
    }

    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.data[self.off(i)..self.off(i + 1)]
    }

    pub fn len(&self) -> usize {
        (self.offs.len() / 8).saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A message when the offsets are not n + 1 ascending positions within the data.
    fn check(&self, n: usize, what: &str) -> Result<(), String> {
        if n == 0 {
            return Ok(()); // no row reads an offset
        }
        if !self.offs.len().is_multiple_of(8) || self.len() < n {
            return Err(format!(
                "{what}: {} offsets for {n} rows",
                self.offs.len() / 8
            ));
        }
        let mut lo = 0usize;
        for i in 0..=n {
            let mut b = [0u8; 8];
            b.copy_from_slice(&self.offs[8 * i..8 * i + 8]);
            let v = i64::from_ne_bytes(b);
            if v < 0 || (v as usize) < lo || v as usize > self.data.len() {
                return Err(format!(
                    "{what}: offset {i} ({v}) is out of order or beyond the data"
                ));
            }
            lo = v as usize;
        }
        Ok(())
    }
}

/// One piece of the content: a literal, or a column's value per row (`valid`: one byte per
/// row, 0 = null; None = no nulls).
pub enum Piece<'a> {
    Lit(&'a [u8]),
    /// a string column, written as a JSON string (null: `null`)
    Str {
        spans: Spans<'a>,
        valid: Option<&'a [u8]>,
    },
    /// a dictionary-encoded string column: int32 indices into `values` (escaped once)
    Dict {
        idx: &'a [u8],
        valid: Option<&'a [u8]>,
        values: Vec<Vec<u8>>,
    },
    /// an int64 column in decimal (null: `null`)
    Int {
        vals: &'a [u8],
        valid: Option<&'a [u8]>,
    },
    /// a boolean column, one byte per row (null: `null`)
    Bool {
        vals: &'a [u8],
        valid: Option<&'a [u8]>,
    },
    /// `prefix` + the value verbatim + `,`, left out where the value is null (the payload)
    Member {
        prefix: &'a [u8],
        spans: Spans<'a>,
        valid: Option<&'a [u8]>,
    },
}

/// `s` as a JSON string literal with RFC 8785 escapes (`replaykit.integrity._json_string`).
pub fn push_json_str(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut from = 0;
    for (i, &b) in s.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&s[from..i]);
        from = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
        }
    }
    out.extend_from_slice(&s[from..]);
    out.push(b'"');
}

#[inline]
fn is_valid(valid: Option<&[u8]>, i: usize) -> bool {
    valid.is_none_or(|v| v[i] != 0)
}

#[inline]
fn i64_at(b: &[u8], i: usize) -> i64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[8 * i..8 * i + 8]);
    i64::from_ne_bytes(x)
}

#[inline]
fn i32_at(b: &[u8], i: usize) -> i32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[4 * i..4 * i + 4]);
    i32::from_ne_bytes(x)
}

impl Piece<'_> {
    /// A message when the piece's buffers do not hold `n` rows.
    fn check(&self, n: usize) -> Result<(), String> {
        let rows = |v: Option<&[u8]>| v.is_none_or(|v| v.len() >= n);
        match self {
            Piece::Lit(_) => Ok(()),
            Piece::Str { spans, valid } | Piece::Member { spans, valid, .. } => {
                if !rows(*valid) {
                    return Err("validity shorter than the rows".into());
                }
                spans.check(n, "string column")
            }
            Piece::Dict { idx, valid, values } => {
                if idx.len() < 4 * n || !rows(*valid) {
                    return Err("dictionary indices shorter than the rows".into());
                }
                for i in 0..n {
                    let k = i32_at(idx, i);
                    if is_valid(*valid, i) && (k < 0 || k as usize >= values.len()) {
                        return Err(format!("dictionary index {k} out of range at row {i}"));
                    }
                }
                Ok(())
            }
            Piece::Int { vals, valid } => {
                if vals.len() < 8 * n || !rows(*valid) {
                    return Err("int64 values shorter than the rows".into());
                }
                Ok(())
            }
            Piece::Bool { vals, valid } => {
                if vals.len() < n || !rows(*valid) {
                    return Err("bool values shorter than the rows".into());
                }
                Ok(())
            }
        }
    }

    #[inline]
    fn write(&self, out: &mut Vec<u8>, i: usize) {
        match self {
            Piece::Lit(s) => out.extend_from_slice(s),
            Piece::Str { spans, valid } => {
                if is_valid(*valid, i) {
                    push_json_str(out, spans.get(i));
                } else {
                    out.extend_from_slice(b"null");
                }
            }
            Piece::Dict { idx, valid, values } => {
                if is_valid(*valid, i) {
                    out.extend_from_slice(&values[i32_at(idx, i) as usize]);
                } else {
                    out.extend_from_slice(b"null");
                }
            }
            Piece::Int { vals, valid } => {
                if is_valid(*valid, i) {
                    let mut b = itoa::Buffer::new();
                    out.extend_from_slice(b.format(i64_at(vals, i)).as_bytes());
                } else {
                    out.extend_from_slice(b"null");
                }
            }
            Piece::Bool { vals, valid } => {
                out.extend_from_slice(match (is_valid(*valid, i), vals[i] != 0) {
                    (false, _) => b"null",
                    (true, true) => b"true",
                    (true, false) => b"false",
                });
            }
            Piece::Member {
                prefix,
                spans,
                valid,
            } => {
                if is_valid(*valid, i) {
                    out.extend_from_slice(prefix);
                    out.extend_from_slice(spans.get(i));
                    out.push(b',');
                }
            }
        }
    }
}

/// The content of every row: `head`, then `derived` where `sealed` (None: every row, if
/// `derived` is not empty), then `tail`.
pub struct Content<'a> {
    pub head: Vec<Piece<'a>>,
    pub derived: Vec<Piece<'a>>,
    pub sealed: Option<&'a [u8]>,
    pub tail: Vec<Piece<'a>>,
}

impl Content<'_> {
    pub fn check(&self, n: usize) -> Result<(), String> {
        if self.sealed.is_some_and(|s| s.len() < n) {
            return Err("sealed mask shorter than the rows".into());
        }
        for p in self.head.iter().chain(&self.derived).chain(&self.tail) {
            p.check(n)?;
        }
        Ok(())
    }

    /// Row `i`'s content bytes, appended to `out`.
    pub fn write(&self, out: &mut Vec<u8>, i: usize) {
        for p in &self.head {
            p.write(out, i);
        }
        if self.sealed.is_none_or(|s| s[i] != 0) {
            for p in &self.derived {
                p.write(out, i);
            }
        }
        for p in &self.tail {
            p.write(out, i);
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex_into(out: &mut [u8], digest: &[u8]) {
    for (j, b) in digest.iter().enumerate() {
        out[2 * j] = HEX[(b >> 4) as usize];
        out[2 * j + 1] = HEX[(b & 15) as usize];
    }
}

/// How each row's `prev` is found.
pub enum Prev<'a> {
    /// verification: the stored `prev_hash` of each row (null read as empty)
    Stored {
        spans: Spans<'a>,
        valid: Option<&'a [u8]>,
    },
    /// stamping: `genesis` at each run start (one byte per row, 1 = start), else the row
    /// before's hash in hex
    Chained { starts: &'a [u8], genesis: &'a [u8] },
}

/// The lowercase hex sha256 of `prev || content` of each of `n` rows: 64 bytes per row.
/// `threads`: how many threads verification may use (0: [`crate::par::threads`]; stamping
/// is sequential).
pub fn digests(
    c: &Content<'_>,
    prev: &Prev<'_>,
    n: usize,
    threads: usize,
) -> Result<Vec<u8>, String> {
    c.check(n)?;
    let mut out = vec![0u8; 64 * n];
    match prev {
        Prev::Stored { spans, valid } => {
            spans.check(n, "prev_hash")?;
            if valid.is_some_and(|v| v.len() < n) {
                return Err("prev_hash validity shorter than the rows".into());
            }
            let hash_range = |first: usize, chunk: &mut [u8]| {
                let mut buf = Vec::with_capacity(1024);
                for (k, slot) in chunk.chunks_exact_mut(64).enumerate() {
                    let i = first + k;
                    buf.clear();
                    c.write(&mut buf, i);
                    let mut h = Sha256::new();
                    if is_valid(*valid, i) {
                        h.update(spans.get(i));
                    }
                    h.update(&buf);
                    hex_into(slot, &h.finalize());
                }
            };
            let threads = crate::par::resolve(threads);
            if threads == 1 || n < 4096 {
                hash_range(0, &mut out);
            } else {
                // several ranges per thread, taken in turn (rows differ in length)
                let mut tasks = Vec::new();
                let mut rest: &mut [u8] = &mut out;
                for (lo, hi) in crate::par::ranges(n, threads, 1024) {
                    let (head, tail) = rest.split_at_mut(64 * (hi - lo));
                    tasks.push((lo, head));
                    rest = tail;
                }
                crate::par::run_tasks(tasks, threads, |(lo, chunk)| hash_range(lo, chunk));
            }
        }
        Prev::Chained { starts, genesis } => {
            if starts.len() < n {
                return Err("run starts shorter than the rows".into());
            }
            let mut buf = Vec::with_capacity(1024);
            for i in 0..n {
                buf.clear();
                c.write(&mut buf, i);
                let mut h = Sha256::new();
                if starts[i] != 0 || i == 0 {
                    h.update(genesis);
                } else {
                    h.update(&out[64 * (i - 1)..64 * i]);
                }
                h.update(&buf);
                let d = h.finalize();
                hex_into(&mut out[64 * i..64 * i + 64], &d);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spans_of;

    #[test]
    fn json_strings_escape_as_rfc8785() {
        let mut out = Vec::new();
        push_json_str(&mut out, "a\"b\\c\nd\u{1}é\u{7f}".as_bytes());
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001é\u{7f}\"".as_bytes());
    }

    #[test]
    fn content_and_digests() {
        let (po, pd) = spans_of(&["{\"a\":1}", "{}"]);
        let (ro, rd) = spans_of(&["r", "r\"2"]);
        let seq: Vec<u8> = [0i64, -5].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let c = Content {
            head: vec![Piece::Lit(b"{")],
            derived: vec![],
            sealed: None,
            tail: vec![
                Piece::Member {
                    prefix: b"\"payload\":",
                    spans: Spans {
                        offs: &po,
                        data: &pd,
                    },
                    valid: Some(&[1, 0]),
                },
                Piece::Lit(b"\"run_id\":"),
                Piece::Str {
                    spans: Spans {
                        offs: &ro,
                        data: &rd,
                    },
                    valid: None,
                },
                Piece::Lit(b",\"seq\":"),
                Piece::Int {
                    vals: &seq,
                    valid: None,
                },
                Piece::Lit(b",\"x\":"),
                Piece::Bool {
                    vals: &[1, 0],
                    valid: Some(&[1, 0]),
                },
                Piece::Lit(b"}"),
            ],
        };
        let mut b = Vec::new();
        c.write(&mut b, 0);
        assert_eq!(b, br#"{"payload":{"a":1},"run_id":"r","seq":0,"x":true}"#);
        b.clear();
        c.write(&mut b, 1);
        assert_eq!(b, br#"{"run_id":"r\"2","seq":-5,"x":null}"#);
        let (vo, vd) = spans_of(&["p", ""]);
        let stored = Prev::Stored {
            spans: Spans {
                offs: &vo,
                data: &vd,
            },
            valid: None,
        };
        let d = digests(&c, &stored, 2, 2).unwrap();
        let want = Sha256::new()
            .chain_update(b"p")
            .chain_update(br#"{"payload":{"a":1},"run_id":"r","seq":0,"x":true}"#)
            .finalize();
        let mut hx = [0u8; 64];
        hex_into(&mut hx, &want);
        assert_eq!(&d[..64], &hx);
        // chained: row 1 hashes row 0's hex
        let chained = Prev::Chained {
            starts: &[1, 0],
            genesis: b"g",
        };
        let d = digests(&c, &chained, 2, 1).unwrap();
        let second = Sha256::new()
            .chain_update(&d[..64])
            .chain_update(br#"{"run_id":"r\"2","seq":-5,"x":null}"#)
            .finalize();
        hex_into(&mut hx, &second);
        assert_eq!(&d[64..], &hx);
    }

    #[test]
    fn no_rows_read_no_offsets() {
        // found by cargo fuzz (target chain): zero rows over an empty offsets buffer
        let empty = Spans {
            offs: &[],
            data: b"\n",
        };
        let c = Content {
            head: vec![Piece::Str {
                spans: empty,
                valid: None,
            }],
            derived: vec![],
            sealed: None,
            tail: vec![],
        };
        let stored = Prev::Stored {
            spans: empty,
            valid: None,
        };
        assert_eq!(digests(&c, &stored, 0, 2), Ok(vec![]));
    }

    #[test]
    fn bad_buffers_are_errors() {
        let (ro, rd) = spans_of(&["r"]);
        let c = Content {
            head: vec![Piece::Str {
                spans: Spans {
                    offs: &ro,
                    data: &rd,
                },
                valid: None,
            }],
            derived: vec![],
            sealed: None,
            tail: vec![],
        };
        let chained = Prev::Chained {
            starts: &[1, 0],
            genesis: b"g",
        };
        assert!(digests(&c, &chained, 2, 1).is_err());
        let five = 5i32.to_ne_bytes();
        let bad_dict = Content {
            head: vec![Piece::Dict {
                idx: &five,
                valid: None,
                values: vec![],
            }],
            derived: vec![],
            sealed: None,
            tail: vec![],
        };
        let chained = Prev::Chained {
            starts: &[1],
            genesis: b"g",
        };
        assert!(digests(&bad_dict, &chained, 1, 1).is_err());
    }
}
