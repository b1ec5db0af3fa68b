//! A strict JSON scanner over bytes (RFC 8259, plus replaykit's own rules).
//!
//! It validates and walks one value, reporting the byte spans the loaders need (strings'
//! contents, numbers' text, objects' extent) without building a tree. It accepts a subset of
//! what the Python reference path accepts, and refuses ("bails") everything it is not sure
//! about, so a caller can hand such input back to the reference implementation:
//!
//! - `NaN`/`Infinity`, leading zeros, bare control characters in strings: not JSON;
//! - nesting deeper than [`MAX_DEPTH`] (the reference's limit), unpaired UTF-16 surrogate
//!   escapes, integers of more than [`MAX_INT_DIGITS`] digits, numbers that overflow a double.
//!
//! UTF-8 validity of the bytes is checked by the caller (once per line, with `std::str`).

/// The deepest nesting of arrays/objects the reference accepts (`replaykit._base.json.MAX_DEPTH`).
pub const MAX_DEPTH: usize = 200;
/// Python's default limit for decoding an integer (`sys.get_int_max_str_digits()`).
pub const MAX_INT_DIGITS: usize = 4300;

/// The scanner refused the input: invalid, or outside what the fast path decides itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

pub type R<T> = Result<T, Bail>;

/// A string value: the byte span of its contents (between the quotes) and whether it holds
/// escapes (then the contents must be decoded, see [`unescape_into`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Str {
    pub start: usize,
    pub end: usize,
    pub escaped: bool,
}

/// A number's text span and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Num {
    pub start: usize,
    pub end: usize,
    /// no fraction and no exponent
    pub integer: bool,
}

/// What kind of value was scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    True,
    False,
    Number(Num),
    String(Str),
    Array,
    Object { start: usize, end: usize },
}

#[inline]
pub fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first byte at or after `i` that is a quote, a backslash or a control character
/// (< 0x20): what ends the plain run of a string's contents. 16 bytes at a time (SSE2, part of
/// every x86-64), else 8 at a time (SWAR), then byte by byte.
#[inline]
pub fn special(s: &[u8], mut i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is always present on x86-64; every load reads 16 bytes inside `s`
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let bslash = _mm_set1_epi8(b'\\' as i8);
            let ctl = _mm_set1_epi8(0x1f);
            while i + 16 <= s.len() {
                let v = _mm_loadu_si128(s.as_ptr().add(i) as *const __m128i);
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                    _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl), // v <= 0x1f
                );
                let m = _mm_movemask_epi8(hit) as u32;
                if m != 0 {
                    return Some(i + m.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    while i + 8 <= s.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        let x = u64::from_le_bytes(w);
        let q = x ^ (LO * b'"' as u64);
        let b = x ^ (LO * b'\\' as u64);
        // bytes equal to zero (after the xor) or below 0x20; the lowest flagged byte is exact
        let m = (q.wrapping_sub(LO) & !q)
            | (b.wrapping_sub(LO) & !b)
            | (x.wrapping_sub(LO * 0x20) & !x);
        let m = m & HI;
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    while i < s.len() {
        let c = s[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// A cursor over one JSON text.
pub struct Scanner<'a> {
    pub s: &'a [u8],
    pub pos: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(s: &'a [u8]) -> Self {
        Scanner { s, pos: 0 }
    }

    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    #[inline]
    pub fn skip_ws(&mut self) {
        while let Some(&b) = self.s.get(self.pos) {
            if !is_ws(b) {
                break;
            }
            self.pos += 1;
        }
    }

    /// Whitespace skipped, returning how many bytes it was.
    #[inline]
    pub fn skip_ws_count(&mut self) -> usize {
        let before = self.pos;
        self.skip_ws();
        self.pos - before
    }

    #[inline]
    pub fn expect(&mut self, b: u8) -> R<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.s[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// A string starting at the opening quote; the cursor ends after the closing quote.
    pub fn string(&mut self) -> R<Str> {
        self.expect(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            // jump to the next quote, backslash or control byte (one pass)
            self.pos = match special(self.s, self.pos) {
                Some(k) => k,
                None => return Err(Bail),
            };
            let c = self.s[self.pos];
            if c < 0x20 {
                return Err(Bail); // a bare control character
            }
            if c == b'"' {
                let end = self.pos;
                self.pos += 1;
                return Ok(Str {
                    start,
                    end,
                    escaped,
                });
            }
            escaped = true;
            self.pos += 1; // the backslash
            match self.peek() {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 1,
                Some(b'u') => {
                    self.pos += 1;
                    let unit = self.hex4()?;
                    if (0xD800..0xDC00).contains(&unit) {
                        // a high surrogate must be followed by an escaped low one
                        if !self.s[self.pos..].starts_with(b"\\u") {
                            return Err(Bail);
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(Bail);
                        }
                    } else if (0xDC00..0xE000).contains(&unit) {
                        return Err(Bail); // a low surrogate without its high one
                    }
                }
                _ => return Err(Bail),
            }
        }
    }

    fn hex4(&mut self) -> R<u32> {
        let h = self.s.get(self.pos..self.pos + 4).ok_or(Bail)?;
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(Bail),
            };
            v = v * 16 + d as u32;
        }
        self.pos += 4;
        Ok(v)
    }

    /// A number (RFC 8259 grammar); integers longer than [`MAX_INT_DIGITS`] digits and
    /// numbers beyond a double's range bail.
    pub fn number(&mut self) -> R<Num> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.pos += 1;
                }
            }
            _ => return Err(Bail),
        }
        let int_digits = self.pos - int_start;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            let d = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == d {
                return Err(Bail);
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            let d = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == d {
                return Err(Bail);
            }
        }
        let num = Num {
            start,
            end: self.pos,
            integer,
        };
        if integer {
            if int_digits > MAX_INT_DIGITS {
                return Err(Bail);
            }
        } else {
            // a float beyond a double's range is not JSON for the reference (1e400)
            let text = std::str::from_utf8(&self.s[start..self.pos]).map_err(|_| Bail)?;
            let x: f64 = text.parse().map_err(|_| Bail)?;
            if !x.is_finite() {
                return Err(Bail);
            }
        }
        Ok(num)
    }

    /// Any value; nested containers are validated (depth counted from `depth`).
    pub fn value(&mut self, depth: usize) -> R<Kind> {
        match self.peek().ok_or(Bail)? {
            b'"' => Ok(Kind::String(self.string()?)),
            b'{' => {
                let start = self.pos;
                self.skip_object(depth + 1)?;
                Ok(Kind::Object {
                    start,
                    end: self.pos,
                })
            }
            b'[' => {
                self.skip_array(depth + 1)?;
                Ok(Kind::Array)
            }
            b't' => self.literal(b"true").map(|_| Kind::True),
            b'f' => self.literal(b"false").map(|_| Kind::False),
            b'n' => self.literal(b"null").map(|_| Kind::Null),
            b'-' | b'0'..=b'9' => Ok(Kind::Number(self.number()?)),
            _ => Err(Bail),
        }
    }

    /// An object whose `{` is at the cursor (`depth`: its own level).
    pub fn skip_object(&mut self, depth: usize) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(Bail);
        }
        self.expect(b'{')?;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            self.value(depth)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }

    pub fn skip_array(&mut self, depth: usize) -> R<()> {
        if depth > MAX_DEPTH {
            return Err(Bail);
        }
        self.expect(b'[')?;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            self.value(depth)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }
}

/// Append the decoded contents of a (validated) string span to `out`.
pub fn unescape_into(s: &[u8], span: Str, out: &mut Vec<u8>) {
    let raw = &s[span.start..span.end];
    if !span.escaped {
        out.extend_from_slice(raw);
        return;
    }
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c != b'\\' {
            // copy the run up to the next backslash
            let k = memchr::memchr(b'\\', &raw[i..]).unwrap_or(raw.len() - i);
            out.extend_from_slice(&raw[i..i + k]);
            i += k;
            continue;
        }
        let e = raw[i + 1];
        i += 2;
        match e {
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            b'/' => out.push(b'/'),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => {
                let hi = hex4(&raw[i..i + 4]);
                i += 4;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    let lo = hex4(&raw[i + 2..i + 6]);
                    i += 6;
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            _ => {}
        }
    }
}

fn hex4(h: &[u8]) -> u32 {
    h.iter().fold(0u32, |v, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => c - b'A' + 10,
        };
        v * 16 + d as u32
    })
}

/// The decoded string (a copy only when it holds escapes).
pub fn decoded<'s>(s: &'s [u8], span: Str) -> std::borrow::Cow<'s, [u8]> {
    if span.escaped {
        let mut v = Vec::with_capacity(span.end - span.start);
        unescape_into(s, span, &mut v);
        std::borrow::Cow::Owned(v)
    } else {
        std::borrow::Cow::Borrowed(&s[span.start..span.end])
    }
}

/// An integer's text as i64 (None: beyond 64 bits).
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i128 = 0;
    for &c in digits {
        v = v * 10 + (c - b'0') as i128;
    }
    if neg {
        v = -v;
    }
    if v < i64::MIN as i128 || v > i64::MAX as i128 {
        None
    } else {
        Some(v as i64)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn special_matches_a_byte_loop() {
        let naive = |s: &[u8], i: usize| {
            (i..s.len()).find(|&k| s[k] == b'"' || s[k] == b'\\' || s[k] < 0x20)
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = [
            b'a', b'"', b'\\', 0x1f, 0x20, 0x00, 0x7f, 0x80, 0x9f, 0xa0, 0xff, b'z',
        ];
        for len in 0..80 {
            for _ in 0..200 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // mostly plain bytes, sometimes a special one
                        if x.is_multiple_of(7) {
                            alphabet[(x >> 8) as usize % alphabet.len()]
                        } else {
                            b'a' + (x >> 16) as u8 % 26
                        }
                    })
                    .collect();
                for start in [0, 1, 3].into_iter().filter(|&st| st <= len) {
                    assert_eq!(special(&s, start), naive(&s, start), "{s:?} from {start}");
                }
            }
        }
    }
    use super::*;

    fn ok(text: &str) -> bool {
        let mut s = Scanner::new(text.as_bytes());
        s.skip_ws();
        let r = s.value(0).is_ok();
        s.skip_ws();
        r && s.pos == text.len()
    }

    #[test]
    fn accepts_json() {
        for t in [
            "{}",
            "[]",
            "0",
            "-0",
            "1.5e-3",
            "\"a\\u00e9\\ud83d\\ude00\"",
            "{\"a\":[1,{\"b\":null}]}",
            " true ",
            "false",
            "-12",
            "1E+2",
        ] {
            assert!(ok(t), "{t}");
        }
    }

    #[test]
    fn refuses_what_is_not_json_or_not_ours() {
        for t in [
            "NaN",
            "Infinity",
            "-Infinity",
            "01",
            "1.",
            ".5",
            "1e",
            "\"a\nb\"",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"\\ud800\\u0041\"",
            "1e400",
            "{\"a\" 1}",
            "[1,]",
            "{,}",
            "\"\\x\"",
            "tru",
            "{\"a\":1",
            "\"abc",
        ] {
            assert!(!ok(t), "{t}");
        }
    }

    #[test]
    fn depth_limit() {
        let deep_ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(ok(&deep_ok));
        assert!(!ok(&too_deep));
    }

    #[test]
    fn long_integers() {
        assert!(ok(&"9".repeat(MAX_INT_DIGITS)));
        assert!(!ok(&"9".repeat(MAX_INT_DIGITS + 1)));
    }

    #[test]
    fn unescape() {
        let text = br#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00""#;
        let mut s = Scanner::new(text);
        let span = s.string().unwrap();
        let mut out = Vec::new();
        unescape_into(text, span, &mut out);
        assert_eq!(out, "a\"b\\c/d\u{8}\u{c}\n\r\té😀".as_bytes());
    }

    #[test]
    fn i64_bounds() {
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-0"), Some(0));
    }
}
