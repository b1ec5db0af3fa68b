//! Canonical JSON (sorted keys, compact, UTF-8, nothing but controls escaped), byte-identical to
//! `replaykit._base.json.canonical_json` (orjson with `OPT_SORT_KEYS`, or the standard-library
//! fallback that mimics it): the text tool-call arguments are hashed by.

use crate::json::{decoded, Bail, Kind, Scanner, R};

/// A decoded JSON value (only built for tool-call arguments: small).
enum V {
    Null,
    True,
    False,
    /// an integer's source text (any length; `-0` is written `0`)
    Int(Vec<u8>),
    Float(f64),
    Str(Vec<u8>),
    Arr(Vec<V>),
    Obj(Vec<(Vec<u8>, V)>),
}

fn parse(sc: &mut Scanner<'_>, depth: usize) -> R<V> {
    sc.skip_ws();
    match sc.peek().ok_or(Bail)? {
        b'{' => {
            if depth + 1 > crate::json::MAX_DEPTH {
                return Err(Bail);
            }
            sc.pos += 1;
            let mut members = Vec::new();
            sc.skip_ws();
            if sc.peek() == Some(b'}') {
                sc.pos += 1;
                return Ok(V::Obj(members));
            }
            loop {
                sc.skip_ws();
                let k = sc.string()?;
                let key = decoded(sc.s, k).into_owned();
                sc.skip_ws();
                sc.expect(b':')?;
                let v = parse(sc, depth + 1)?;
                members.push((key, v));
                sc.skip_ws();
                match sc.peek() {
                    Some(b',') => sc.pos += 1,
                    Some(b'}') => {
                        sc.pos += 1;
                        return Ok(V::Obj(members));
                    }
                    _ => return Err(Bail),
                }
            }
        }
        b'[' => {
            if depth + 1 > crate::json::MAX_DEPTH {
                return Err(Bail);
            }
            sc.pos += 1;
            let mut items = Vec::new();
            sc.skip_ws();
            if sc.peek() == Some(b']') {
                sc.pos += 1;
                return Ok(V::Arr(items));
            }
            loop {
                items.push(parse(sc, depth + 1)?);
                sc.skip_ws();
                match sc.peek() {
                    Some(b',') => sc.pos += 1,
                    Some(b']') => {
                        sc.pos += 1;
                        return Ok(V::Arr(items));
                    }
                    _ => return Err(Bail),
                }
            }
        }
        _ => match sc.value(depth)? {
            Kind::Null => Ok(V::Null),
            Kind::True => Ok(V::True),
            Kind::False => Ok(V::False),
            Kind::Number(n) => {
                let text = &sc.s[n.start..n.end];
                if n.integer {
                    Ok(V::Int(text.to_vec()))
                } else {
                    let t = std::str::from_utf8(text).map_err(|_| Bail)?;
                    Ok(V::Float(t.parse().map_err(|_| Bail)?))
                }
            }
            Kind::String(s) => Ok(V::Str(decoded(sc.s, s).into_owned())),
            Kind::Array | Kind::Object { .. } => Err(Bail), // handled above
        },
    }
}

/// Canonical JSON text of the JSON value in `text` (which must be exactly one value).
pub fn canonical(text: &[u8]) -> R<Vec<u8>> {
    let mut sc = Scanner::new(text);
    let v = parse(&mut sc, 0)?;
    sc.skip_ws();
    if sc.pos != text.len() {
        return Err(Bail);
    }
    let mut out = Vec::with_capacity(text.len());
    write(&v, &mut out);
    Ok(out)
}

fn write(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Null => out.extend_from_slice(b"null"),
        V::True => out.extend_from_slice(b"true"),
        V::False => out.extend_from_slice(b"false"),
        V::Int(t) => {
            if t.as_slice() == b"-0" {
                out.push(b'0');
            } else {
                out.extend_from_slice(t);
            }
        }
        V::Float(x) => float_text(*x, out),
        V::Str(s) => write_str(s, out),
        V::Arr(items) => {
            out.push(b'[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(it, out);
            }
            out.push(b']');
        }
        V::Obj(members) => {
            // sorted by key; of repeated keys the last one counts (as in a decoded dict)
            let mut order: Vec<usize> = (0..members.len()).collect();
            order.sort_by(|&a, &b| members[a].0.cmp(&members[b].0).then(a.cmp(&b)));
            out.push(b'{');
            let mut first = true;
            for (j, &i) in order.iter().enumerate() {
                if j + 1 < order.len() && members[order[j + 1]].0 == members[i].0 {
                    continue; // a later member of the same key follows
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                write_str(&members[i].0, out);
                out.push(b':');
                write(&members[i].1, out);
            }
            out.push(b'}');
        }
    }
}

/// A JSON string as orjson writes it: `"` and `\` escaped, controls as `\n`-style or
/// `\u00xx` escapes, everything else (non-ASCII included) as is. The plain runs between the
/// bytes that need an escape are found with [`crate::json::special`] and copied whole.
pub fn write_str(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut run = 0;
    while let Some(i) = crate::json::special(s, run) {
        out.extend_from_slice(&s[run..i]);
        push_escape(s[i], out);
        run = i + 1;
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

#[inline]
fn push_escape(c: u8, out: &mut Vec<u8>) {
    let esc: &[u8] = match c {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(c >> 4) as usize]);
            out.push(HEX[(c & 15) as usize]);
            return;
        }
    };
    out.extend_from_slice(esc);
}

/// A float as orjson writes it (Python's `repr`, except that negative exponents are written
/// without a leading zero, `1e-7`, and magnitudes of 1e-5 in plain decimal, `0.000015`).
pub fn float_text(x: f64, out: &mut Vec<u8>) {
    // shortest round-trip digits and the decimal exponent, from Rust's own formatting; where
    // two digit strings of that length both read back as `x` (the value lies half-way), repr
    // writes the one nearer the exact value, ties to even: Rust's precision formatting rounds
    // the exact value that way (70368744177664.625: repr `.62`, shortest `{:e}` `.63`)
    let mut sci = format!("{:e}", x);
    let n = sci
        .split('e')
        .next()
        .unwrap_or("")
        .bytes()
        .filter(u8::is_ascii_digit)
        .count();
    if n > 1 {
        let near = format!("{:.*e}", n - 1, x);
        if near != sci && near.parse::<f64>() == Ok(x) {
            sci = near;
        }
    }
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    if neg {
        out.push(b'-');
    }
    if (-4..16).contains(&exp) {
        // fixed notation, as repr writes it (always with a fraction)
        if exp >= 0 {
            let e = exp as usize;
            let (int, frac) = if digits.len() > e + 1 {
                (digits[..e + 1].to_string(), digits[e + 1..].to_string())
            } else {
                (
                    format!("{}{}", digits, "0".repeat(e + 1 - digits.len())),
                    "0".to_string(),
                )
            };
            out.extend_from_slice(int.as_bytes());
            out.push(b'.');
            out.extend_from_slice(frac.as_bytes());
        } else {
            out.extend_from_slice(b"0.");
            out.extend_from_slice("0".repeat((-exp - 1) as usize).as_bytes());
            out.extend_from_slice(digits.as_bytes());
        }
    } else if exp == -5 {
        out.extend_from_slice(b"0.0000");
        out.extend_from_slice(digits.as_bytes());
    } else {
        // scientific: repr's mantissa (d or d.ddd), then e+XX / e-X
        out.extend_from_slice(&digits.as_bytes()[..1]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        out.push(b'e');
        if exp < 0 {
            out.extend_from_slice(exp.to_string().as_bytes());
        } else {
            out.extend_from_slice(format!("+{:02}", exp).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_ties_are_written_as_repr_writes_them() {
        // shortest digits that read back, the nearer of two, ties to even (Python's repr)
        for (x, want) in [
            (70368744177664.62, "70368744177664.62"),
            (0.3, "0.3"),
            (1e22, "1e+22"),
            (5e-324, "5e-324"),
            (2.0f64.powi(60) + 2048.0, "1.152921504606849e+18"),
            (123456789012345.67, "123456789012345.67"),
        ] {
            let mut o = Vec::new();
            float_text(x, &mut o);
            assert_eq!(String::from_utf8(o).unwrap(), want);
        }
    }

    fn c(t: &str) -> String {
        String::from_utf8(canonical(t.as_bytes()).unwrap()).unwrap()
    }

    fn f(x: f64) -> String {
        let mut o = Vec::new();
        float_text(x, &mut o);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn sorts_dedupes_compacts() {
        assert_eq!(
            c(r#"{ "b" : 1, "a" : [ 2 , -0 ], "b": 3 }"#),
            r#"{"a":[2,0],"b":3}"#
        );
        assert_eq!(c(r#""a\u00e9\n\u001f\/""#), "\"aé\\n\\u001f/\"");
        assert_eq!(c("12345678901234567890123"), "12345678901234567890123");
    }

    #[test]
    fn write_str_matches_a_byte_loop() {
        fn naive(s: &[u8]) -> Vec<u8> {
            let mut out = vec![b'"'];
            for &c in s {
                match c {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0x08 => out.extend_from_slice(b"\\b"),
                    0x0c => out.extend_from_slice(b"\\f"),
                    0..=0x1f => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
                    _ => out.push(c),
                }
            }
            out.push(b'"');
            out
        }
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let alphabet = [
            b'"', b'\\', b'\n', b'\r', b'\t', 0x08, 0x0c, 0x00, 0x1f, 0x7f, 0xc3, 0xa9,
        ];
        for len in 0..70 {
            for _ in 0..100 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x.is_multiple_of(5) {
                            alphabet[(x >> 8) as usize % alphabet.len()]
                        } else {
                            b'a' + (x >> 16) as u8 % 26
                        }
                    })
                    .collect();
                let mut got = Vec::new();
                write_str(&s, &mut got);
                assert_eq!(got, naive(&s), "{s:?}");
            }
        }
    }

    #[test]
    fn floats_as_orjson() {
        // the values were checked against orjson 3.x
        assert_eq!(f(1e16), "1e+16");
        assert_eq!(f(1e-7), "1e-7");
        assert_eq!(f(1.5e-5), "0.000015");
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(100.0), "100.0");
        assert_eq!(f(-0.0), "-0.0");
        assert_eq!(f(1e22), "1e+22");
        assert_eq!(f(123456789.123), "123456789.123");
        assert_eq!(f(0.0001), "0.0001");
        assert_eq!(f(1.5e300), "1.5e+300");
        assert_eq!(f(1e15), "1000000000000000.0");
        assert_eq!(f(-2.5e-10), "-2.5e-10");
    }
}
