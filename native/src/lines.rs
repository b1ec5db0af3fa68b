//! Shared plumbing of the JSON-lines scanners (the Claude Code transcript scanner in
//! `transcripts.rs`; any other per-line format can use it): the line split exactly as the
//! reference reads lines (`replaykit.io._common.iter_lines` and `_records.json_lines`), one
//! value tree per line, Python's truthiness, canonical JSON of an object with some members
//! replaced, and the tool-argument hash.
//!
//! The value tree is the one the toh scanner defined (`toh::V`, sorted members, the last of
//! repeated keys kept, as a decoded dict): one JSON tokenizer (`json.rs`) and one tree for every
//! format; each format only adds its mapping.

use sha2::{Digest, Sha256};

pub use crate::toh::{parse_text, write, V};

/// The bytes Python's `bytes.strip()` removes (a line of only these is blank).
#[inline]
fn py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The non-blank lines of a JSONL file: `(1-based line number, the line without its "\n"
/// and one "\r" before it)`, numbered as the reference numbers them (blank lines counted).
pub fn lines(file: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut pos = 0usize;
    let mut no = 0usize;
    std::iter::from_fn(move || loop {
        if pos >= file.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &file[pos..]).map_or(file.len(), |k| pos + k);
        let mut raw = &file[pos..end];
        pos = end + 1;
        no += 1;
        if let Some(r) = raw.strip_suffix(b"\r") {
            raw = r;
        }
        if raw.iter().all(|&b| py_space(b)) {
            continue;
        }
        return Some((no, raw));
    })
}

/// The JSON object of each non-blank line, with its line number; None when any line is not
/// a JSON object the strict scanner accepts, or the file is not UTF-8 (the reference then
/// reads the file and quarantines those lines with its reasons).
pub fn objects(file: &[u8]) -> Option<Vec<(usize, V<'_>)>> {
    std::str::from_utf8(file).ok()?;
    let mut out = Vec::new();
    for (no, raw) in lines(file) {
        let v = parse_text(raw).ok()?;
        if !matches!(v, V::Obj(_)) {
            return None;
        }
        out.push((no, v));
    }
    Some(out)
}

/// The member `key` of an object value (None: absent, or `v` is not an object).
#[inline]
pub fn get<'v, 'a>(v: &'v V<'a>, key: &[u8]) -> Option<&'v V<'a>> {
    v.get(key)
}

/// The bytes of a string value (None: absent or not a string).
#[inline]
pub fn str_of<'v>(v: Option<&'v V<'_>>) -> Option<&'v [u8]> {
    match v {
        Some(V::Str(s)) => Some(s),
        _ => None,
    }
}

/// Python's truthiness of a decoded value (`None` for an absent member: falsy).
pub fn truthy(v: Option<&V<'_>>) -> bool {
    match v {
        None | Some(V::Null) | Some(V::False) => false,
        Some(V::True) => true,
        Some(V::Int(t)) => !t.iter().all(|&c| c == b'0' || c == b'-'),
        Some(V::Float(x)) => *x != 0.0,
        Some(V::Str(s)) => !s.is_empty(),
        Some(V::Arr(a)) => !a.is_empty(),
        Some(V::Obj(m)) => !m.is_empty(),
    }
}

/// A member written in place of (or beside) an object's own by [`write_over`].
pub enum Over<'v, 'a> {
    /// an integer
    Int(usize),
    /// a string (no escapes needed)
    Word(&'static [u8]),
    /// a one-item array holding this value
    One(&'v V<'a>),
    /// an object with some members replaced
    Obj(&'v V<'a>, Vec<(&'static [u8], Over<'v, 'a>)>),
}

fn write_over_value(o: &Over<'_, '_>, out: &mut Vec<u8>) {
    match o {
        Over::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Over::Word(w) => {
            out.push(b'"');
            out.extend_from_slice(w);
            out.push(b'"');
        }
        Over::One(v) => {
            out.push(b'[');
            write(v, out);
            out.push(b']');
        }
        Over::Obj(v, over) => write_over(v, over, out),
    }
}

/// Canonical JSON of `{**obj, **over}` (`obj` an object value, or anything else read as `{}`,
/// as `msg or {}` does; `over` sorted by key, keys without escapes).
pub fn write_over(obj: &V<'_>, over: &[(&'static [u8], Over<'_, '_>)], out: &mut Vec<u8>) {
    let empty = Vec::new();
    let members = match obj {
        V::Obj(m) => m,
        _ => &empty,
    };
    out.push(b'{');
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !first {
            out.push(b',');
        }
        first = false;
    };
    let mut k = 0;
    for (key, v) in members.iter() {
        while k < over.len() && over[k].0 < key.as_ref() {
            sep(out);
            crate::canon::write_str(over[k].0, out);
            out.push(b':');
            write_over_value(&over[k].1, out);
            k += 1;
        }
        if k < over.len() && over[k].0 == key.as_ref() {
            continue; // replaced: written when the next member (or the end) comes
        }
        sep(out);
        write_member(key, v, out);
    }
    while k < over.len() {
        sep(out);
        crate::canon::write_str(over[k].0, out);
        out.push(b':');
        write_over_value(&over[k].1, out);
        k += 1;
    }
    out.push(b'}');
}

fn write_member(key: &[u8], v: &V<'_>, out: &mut Vec<u8>) {
    crate::canon::write_str(key, out);
    out.push(b':');
    write(v, out);
}

/// The first 32 hex digits of the SHA-256 of `text` (`replaykit._base.json.args_hash` of a value
/// whose canonical JSON is `text`).
pub fn hash32(text: &[u8]) -> [u8; 32] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(text);
    let mut out = [0u8; 32];
    for (i, b) in digest.iter().take(16).enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

/// `str.lstrip()` of UTF-8 text: Python's whitespace is Unicode `White_Space` plus the
/// information separators U+001C..U+001F.
pub fn py_lstrip(s: &[u8]) -> &[u8] {
    match std::str::from_utf8(s) {
        Ok(t) => t
            .trim_start_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
            .as_bytes(),
        Err(_) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(v: &V<'_>) -> String {
        let mut o = Vec::new();
        write(v, &mut o);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn lines_as_python_reads_them() {
        let f = b"{\"a\":1}\r\n\n  \t\x0b\n{\"b\":2}\n\r\n{\"c\":3}";
        let got: Vec<(usize, &[u8])> = lines(f).collect();
        assert_eq!(
            got,
            vec![
                (1, &b"{\"a\":1}"[..]),
                (4, &b"{\"b\":2}"[..]),
                (6, &b"{\"c\":3}"[..])
            ]
        );
        assert!(objects(b"{}\n[1]\n").is_none());
        assert!(objects(b"{}\n{\"a\":\xff}\n").is_none());
        assert_eq!(objects(b"{}\n\n{\"a\":1}\n").unwrap().len(), 2);
    }

    #[test]
    fn truthiness() {
        for (t, want) in [
            ("0", false),
            ("-0", false),
            ("0.0", false),
            ("1", true),
            ("\"\"", false),
            ("\"x\"", true),
            ("[]", false),
            ("[0]", true),
            ("{}", false),
            ("null", false),
            ("true", true),
            ("false", false),
        ] {
            let v = parse_text(t.as_bytes()).unwrap();
            assert_eq!(truthy(Some(&v)), want, "{t}");
        }
        assert!(!truthy(None));
    }

    #[test]
    fn objects_with_members_replaced() {
        let doc = parse_text(br#"{"z":1,"message":{"id":"m","content":[1,2]},"a":null}"#).unwrap();
        let msg = doc.get(b"message").unwrap();
        let two = parse_text(b"{\"type\":\"text\"}").unwrap();
        let mut out = Vec::new();
        write_over(
            &doc,
            &[
                (b"contentIndex", Over::Int(1)),
                (b"contentPart", Over::Word(b"call")),
                (
                    b"message",
                    Over::Obj(msg, vec![(b"content", Over::One(&two))]),
                ),
            ],
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":null,"contentIndex":1,"contentPart":"call","message":{"content":[{"type":"text"}],"id":"m"},"z":1}"#
        );
        let mut out = Vec::new();
        write_over(&V::Null, &[(b"k", Over::Int(0))], &mut out);
        assert_eq!(out, b"{\"k\":0}");
        assert_eq!(
            canon(&doc),
            r#"{"a":null,"message":{"content":[1,2],"id":"m"},"z":1}"#
        );
    }

    #[test]
    fn lstrip_and_hash() {
        assert_eq!(py_lstrip(" \u{1c}\u{3000}x ".as_bytes()), b"x ");
        // sha256("{}") starts 44136fa355b3678a
        assert_eq!(&hash32(b"{}")[..16], b"44136fa355b3678a");
    }
}
