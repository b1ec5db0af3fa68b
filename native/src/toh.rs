//! The toh session-log file scanner (`replaykit.io.toh`, see `_nativepath.py`).
//!
//! One pass over a whole file: the line split, strict JSON validation of every line (a value
//! tree with objects sorted by key and repeated keys resolved as a decoded dict does, the last
//! one counts), the session header's span, each event line's canonical payload (sorted keys,
//! compact: byte for byte `orjson.dumps(obj, option=OPT_SORT_KEYS)`) and typed fields (what
//! `_events._decode_event` picks), packed rows validated (`_lines._packed_problem`) and
//! expanded into one `assistant/chunk` event per member with its canonical payload, and the
//! sequence numbers (explicit, or the implicit counter).
//!
//! It decides only files the reference reads without a single quarantine row: any line the
//! reference would quarantine (bad JSON, bad UTF-8, a line that is not an object, a missing
//! type, a bad packed row, a bad seq/time, mixed envelopes, bad tokens), an empty or
//! headerless file, and whatever it is not sure about make it return `None`, and the caller
//! reads the file with the reference code, which finds and reports the bad lines. The
//! session header itself is checked by the caller (`_check_header`) on the span returned.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::canon::{float_text, write_str};
use crate::cols::{Bits, BoolCol, F64Col, I64Col, StrCol};
use crate::json::{decoded, parse_i64, Bail, Kind, Scanner, MAX_DEPTH, R};
use sha2::{Digest, Sha256};

/// A decoded JSON value; objects hold their members sorted by key, one per key (the last).
pub enum V<'a> {
    Null,
    True,
    False,
    /// an integer's source text (any length)
    Int(&'a [u8]),
    Float(f64),
    Str(Cow<'a, [u8]>),
    Arr(Vec<V<'a>>),
    Obj(Vec<(Cow<'a, [u8]>, V<'a>)>),
}

impl<'a> V<'a> {
    /// The member `key` of an object (None: absent, or not an object).
    pub fn get(&self, key: &[u8]) -> Option<&V<'a>> {
        match self {
            V::Obj(m) => m
                .binary_search_by(|(k, _)| k.as_ref().cmp(key))
                .ok()
                .map(|i| &m[i].1),
            _ => None,
        }
    }

    fn str(&self) -> Option<&[u8]> {
        match self {
            V::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer that fits 64 bits (Python: `is_int64`).
    fn i64(&self) -> Option<i64> {
        match self {
            V::Int(t) => parse_i64(t),
            _ => None,
        }
    }

    fn is_int(&self) -> bool {
        matches!(self, V::Int(_))
    }

    fn is_obj(&self) -> bool {
        matches!(self, V::Obj(_))
    }
}

fn parse<'a>(sc: &mut Scanner<'a>, depth: usize) -> R<V<'a>> {
    sc.skip_ws();
    match sc.peek().ok_or(Bail)? {
        b'{' => {
            if depth + 1 > MAX_DEPTH {
                return Err(Bail);
            }
            sc.pos += 1;
            let mut members: Vec<(Cow<'a, [u8]>, V<'a>)> = Vec::new();
            sc.skip_ws();
            if sc.peek() == Some(b'}') {
                sc.pos += 1;
                return Ok(V::Obj(members));
            }
            loop {
                sc.skip_ws();
                let k = sc.string()?;
                let key = decoded(sc.s, k);
                sc.skip_ws();
                sc.expect(b':')?;
                let v = parse(sc, depth + 1)?;
                members.push((key, v));
                sc.skip_ws();
                match sc.peek() {
                    Some(b',') => sc.pos += 1,
                    Some(b'}') => {
                        sc.pos += 1;
                        break;
                    }
                    _ => return Err(Bail),
                }
            }
            let sorted = members.windows(2).all(|w| w[0].0 < w[1].0);
            if !sorted {
                // stable: of repeated keys the last one is kept (as in a decoded dict)
                members.sort_by(|a, b| a.0.cmp(&b.0));
                let mut out: Vec<(Cow<'a, [u8]>, V<'a>)> = Vec::with_capacity(members.len());
                for m in members {
                    match out.last_mut() {
                        Some(last) if last.0 == m.0 => *last = m,
                        _ => out.push(m),
                    }
                }
                members = out;
            }
            Ok(V::Obj(members))
        }
        b'[' => {
            if depth + 1 > MAX_DEPTH {
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
                    Ok(V::Int(text))
                } else {
                    let t = std::str::from_utf8(text).map_err(|_| Bail)?;
                    Ok(V::Float(t.parse().map_err(|_| Bail)?))
                }
            }
            Kind::String(s) => Ok(V::Str(decoded(sc.s, s))),
            Kind::Array | Kind::Object { .. } => Err(Bail), // handled above
        },
    }
}

/// The value of one JSON text (exactly one value, whitespace around it allowed).
pub fn parse_text(text: &[u8]) -> R<V<'_>> {
    let mut sc = Scanner::new(text);
    let v = parse(&mut sc, 0)?;
    sc.skip_ws();
    if sc.pos != text.len() {
        return Err(Bail);
    }
    Ok(v)
}

/// Canonical JSON of a value (sorted keys, compact; `-0` is `0`), as orjson writes it.
pub fn write(v: &V<'_>, out: &mut Vec<u8>) {
    match v {
        V::Null => out.extend_from_slice(b"null"),
        V::True => out.extend_from_slice(b"true"),
        V::False => out.extend_from_slice(b"false"),
        V::Int(t) => {
            if *t == b"-0" {
                out.push(b'0');
            } else {
                out.extend_from_slice(t);
            }
        }
        V::Float(x) => float_text(*x, out),
        V::Str(s) => json_str(s, out),
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
            out.push(b'{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(k, out);
                out.push(b':');
                write(v, out);
            }
            out.push(b'}');
        }
    }
}

/// A decoded string as canonical JSON: a string borrowed from the line held no escape, so
/// (valid JSON: no control character, quote or backslash either) it is written as it was.
#[inline]
#[allow(clippy::ptr_arg)] // the variant is the point: Borrowed means "held no escape"
fn json_str(s: &Cow<'_, [u8]>, out: &mut Vec<u8>) {
    match s {
        Cow::Borrowed(b) => {
            out.reserve(b.len() + 2);
            out.push(b'"');
            out.extend_from_slice(b);
            out.push(b'"');
        }
        Cow::Owned(b) => write_str(b, out),
    }
}

/// A scanned file: its events (rows and packed members) in (line, member) order.
pub struct TohOut {
    /// byte span of the session header line (BOM removed) within the file
    pub header: (usize, usize),
    pub line: Vec<i64>,
    /// the explicit seq, else the implicit counter
    pub seq: Vec<i64>,
    pub time: F64Col,
    pub typ: StrCol,
    pub payload: StrCol,
    pub turn: I64Col,
    pub step: I64Col,
    pub chunk_type: StrCol,
    pub text: StrCol,
    pub ref_id: StrCol,
    pub tool_name: StrCol,
    pub args_hash: StrCol,
    pub cache_key: StrCol,
    pub is_error: BoolCol,
    pub finish: StrCol,
    pub input_tokens: I64Col,
    pub output_tokens: I64Col,
    pub event_id: StrCol,
    /// the model-call id `t{turn}.s{step}.c{k}` of `assistant/chunk` and `assistant/message`
    /// events (`_assemble._call_ids`): the k-th call of that step, a call ending with its
    /// `finish` chunk; a message gets the id of the call its step's last chunk belongs to
    pub call_id: StrCol,
    /// per event: other, chunk, finish chunk or message (for the call ids)
    call_kind: Vec<u8>,
    /// rows of `tool/call` events whose arguments are a JSON string: their hash depends on
    /// whether the string parses (the reference's `args_hash` decides); null here
    pub py_hash_rows: Vec<i64>,
}

impl TohOut {
    fn new(lines: usize, bytes: usize) -> Self {
        let out = Self::reserved(lines, bytes);
        crate::cols::huge_pages(&out.payload.data);
        crate::cols::huge_pages(&out.text.data);
        if let crate::cols::Offsets::I64(o) = &out.payload.offsets {
            crate::cols::huge_pages(o);
        }
        out
    }

    fn reserved(lines: usize, bytes: usize) -> Self {
        // capacities reserved generously (pages never written are never mapped, so they cost
        // no memory): a packed row stands for many events, a member's payload is many times
        // its text
        let ev = lines.max(bytes / 48);
        let i64s = || I64Col {
            values: Vec::with_capacity(ev),
            valid: Bits::default(),
        };
        TohOut {
            header: (0, 0),
            line: Vec::with_capacity(ev),
            seq: Vec::with_capacity(ev),
            time: F64Col {
                values: Vec::with_capacity(ev),
                valid: Bits::default(),
            },
            typ: StrCol::new(false, ev, ev * 16),
            payload: StrCol::new(true, ev, bytes + (2 * bytes).min(1 << 30) + 4096),
            turn: i64s(),
            step: i64s(),
            chunk_type: StrCol::new(false, ev, ev * 4),
            text: StrCol::new(true, ev, bytes),
            ref_id: StrCol::new(false, ev, 0),
            tool_name: StrCol::new(false, ev, 0),
            args_hash: StrCol::new(false, ev, 0),
            cache_key: StrCol::new(false, ev, 0),
            is_error: BoolCol::default(),
            finish: StrCol::new(false, ev, 0),
            input_tokens: i64s(),
            output_tokens: i64s(),
            event_id: StrCol::new(false, ev, 0),
            call_id: StrCol::new(false, 0, 0),
            call_kind: Vec::with_capacity(ev),
            py_hash_rows: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.line.len()
    }

    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }

    /// True when a 32-bit offset column would overflow (the caller then refuses the file).
    fn overflows(&self) -> bool {
        [
            &self.typ,
            &self.chunk_type,
            &self.ref_id,
            &self.tool_name,
            &self.args_hash,
            &self.cache_key,
            &self.finish,
            &self.event_id,
            &self.call_id,
        ]
        .iter()
        .any(|c| c.overflows())
    }
}

/// Typed fields of one non-packed event line (`_decode_event`).
#[derive(Default)]
struct Fields<'v> {
    chunk_type: Option<Cow<'v, [u8]>>,
    text: Option<Cow<'v, [u8]>>,
    ref_id: Option<&'v [u8]>,
    tool_name: Option<&'v [u8]>,
    args_hash: Option<[u8; 32]>,
    py_hash: bool,
    cache_key: Option<&'v [u8]>,
    is_error: bool,
    finish: Option<&'v [u8]>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    event_id: Option<&'v [u8]>,
}

const EPOCH_MS_MIN: i64 = -62_135_596_800_000;
const EPOCH_MS_MAX: i64 = 253_402_300_799_999;

/// `is_epoch_ms`: an int or float within years 1..9999 (as f64 for the column).
fn epoch_ms(v: &V<'_>) -> Option<f64> {
    match v {
        V::Int(t) => {
            let x = parse_i64(t)?;
            (EPOCH_MS_MIN..=EPOCH_MS_MAX)
                .contains(&x)
                .then_some(x as f64)
        }
        V::Float(x) => (*x >= EPOCH_MS_MIN as f64 && *x <= EPOCH_MS_MAX as f64).then_some(*x),
        _ => None,
    }
}

fn i32_of(v: Option<&V<'_>>) -> Option<i64> {
    let x = v?.i64()?;
    (i32::MIN as i64..=i32::MAX as i64)
        .contains(&x)
        .then_some(x)
}

fn str_of<'v>(v: Option<&'v V<'_>>) -> Option<&'v [u8]> {
    v.and_then(|v| v.str())
}

fn canonical_of(v: &V<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    write(v, &mut out);
    out
}

/// `_text_parts`: the joined texts of a content array, None when it holds none.
fn text_parts<'v>(content: Option<&'v V<'_>>) -> Option<Cow<'v, [u8]>> {
    let Some(V::Arr(items)) = content else {
        return None;
    };
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in items {
        if !c.is_obj() {
            continue;
        }
        let typ_ok = match c.get(b"type") {
            None => true,
            Some(t) => t.str() == Some(b"text"),
        };
        if !typ_ok {
            continue;
        }
        if let Some(t) = str_of(c.get(b"text")) {
            parts.push(t);
        }
    }
    match parts.len() {
        0 => None,
        1 => Some(Cow::Borrowed(parts[0])),
        _ => Some(Cow::Owned(parts.join(&b'\n'))),
    }
}

/// `_tool_result_fields`: (call id, is_error, text) of a `tool/result`'s data.
/// A tool result's (call id, is_error, text).
type ResultFields<'v> = (Option<&'v [u8]>, bool, Option<Cow<'v, [u8]>>);

fn tool_result<'v>(data: &'v V<'_>) -> ResultFields<'v> {
    if let Some(call) = data.get(b"callId") {
        let is_err = matches!(data.get(b"isError"), Some(V::True));
        return (call.str(), is_err, text_parts(data.get(b"content")));
    }
    let Some(msg) = data.get(b"message").filter(|m| m.is_obj()) else {
        return (None, false, None);
    };
    let src_call = || {
        msg.get(b"source")
            .filter(|s| s.is_obj())
            .and_then(|s| str_of(s.get(b"callId")))
    };
    let one: [&V<'_>; 1];
    let items: &[V<'_>] = match msg.get(b"content") {
        Some(V::Arr(a)) => a,
        None | Some(V::Null) => &[],
        Some(d @ V::Obj(_)) => {
            one = [d];
            return tool_result_items(&one, msg);
        }
        Some(other) => {
            let text = match other {
                V::Str(s) => Cow::Borrowed(s.as_ref()),
                v => Cow::Owned(canonical_of(v)),
            };
            return (src_call(), false, Some(text));
        }
    };
    let refs: Vec<&V<'_>> = items.iter().collect();
    tool_result_items(&refs, msg)
}

fn tool_result_items<'v>(items: &[&'v V<'_>], msg: &'v V<'_>) -> ResultFields<'v> {
    let mut r: Option<&'v [u8]> = None;
    let mut is_err = false;
    let mut texts: Vec<Cow<'v, [u8]>> = Vec::new();
    for item in items {
        if !item.is_obj() {
            continue;
        }
        if r.is_none() {
            if let Some(id) = str_of(item.get(b"toolCallId")) {
                r = Some(id);
            }
        }
        if matches!(item.get(b"isError"), Some(V::True)) {
            is_err = true;
        }
        let t = match item.get(b"content") {
            None | Some(V::Null) => None,
            c @ Some(V::Arr(_)) => text_parts(c),
            Some(V::Str(s)) => Some(Cow::Borrowed(s.as_ref())),
            Some(v) => Some(Cow::Owned(canonical_of(v))),
        };
        if let Some(t) = t {
            texts.push(t);
        }
    }
    let mut ref_id = r;
    if ref_id.is_none() {
        if let Some(src) = msg.get(b"source").filter(|s| s.is_obj()) {
            // the reference takes src["callId"] of any type, then keeps strings only
            ref_id = str_of(src.get(b"callId"));
        }
    }
    let text = match texts.len() {
        0 => None,
        1 => texts.pop(),
        _ => {
            let mut out = Vec::new();
            for (i, t) in texts.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                out.extend_from_slice(t);
            }
            Some(Cow::Owned(out))
        }
    };
    (ref_id, is_err, text)
}

fn hex32(digest: &[u8]) -> [u8; 32] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 32];
    for (i, b) in digest.iter().take(16).enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

/// `_decode_event`'s fields of an event of type `t` (`obj` its object). Err: the reference
/// would quarantine the line (tokens beyond 64 bits).
fn decode_event<'v>(obj: &'v V<'_>, t: &[u8]) -> R<Fields<'v>> {
    let mut f = Fields::default();
    let data = obj.get(b"data").filter(|d| d.is_obj());
    let get = |k: &[u8]| data.and_then(|d| d.get(k));
    let ck = match data.and_then(|d| d.get(b"cacheKey")) {
        Some(v) => Some(v),
        None => obj.get(b"cacheKey"),
    };
    match t {
        b"assistant/chunk" => {
            if let Some(c) = get(b"chunk").filter(|c| c.is_obj()) {
                if let Some(V::Str(ct)) = c.get(b"type") {
                    match ct.as_ref() {
                        b"text-delta" => {
                            f.chunk_type = Some(Cow::Borrowed(b"text"));
                            f.text = str_of(c.get(b"text")).map(Cow::Borrowed);
                        }
                        b"reasoning-delta" => {
                            f.chunk_type = Some(Cow::Borrowed(b"reasoning"));
                            f.text = str_of(c.get(b"text")).map(Cow::Borrowed);
                        }
                        b"tool-call-delta" => {
                            f.chunk_type = Some(Cow::Borrowed(b"tool-call"));
                            f.text = str_of(c.get(b"argumentsDelta")).map(Cow::Borrowed);
                        }
                        b"usage" => {
                            f.chunk_type = Some(Cow::Borrowed(b"usage"));
                            if let Some(u) = c.get(b"usage").filter(|u| u.is_obj()) {
                                for (key, slot) in [
                                    (&b"inputTokens"[..], &mut f.input_tokens),
                                    (&b"outputTokens"[..], &mut f.output_tokens),
                                ] {
                                    if let Some(v) = u.get(key).filter(|v| v.is_int()) {
                                        // an integer beyond 64 bits: the line is quarantined
                                        *slot = Some(v.i64().ok_or(Bail)?);
                                    }
                                }
                            }
                        }
                        b"finish" => {
                            f.chunk_type = Some(Cow::Borrowed(b"finish"));
                            let r = c.get(b"reason");
                            let fk = match r {
                                Some(r @ V::Obj(_)) => r.get(b"kind"),
                                other => other,
                            };
                            let fin = str_of(fk).unwrap_or(b"unknown");
                            f.is_error = fin == b"error";
                            f.finish = Some(fin);
                        }
                        other => f.chunk_type = Some(Cow::Borrowed(other)),
                    }
                }
            }
        }
        b"tool/call" => {
            match get(b"arguments") {
                None | Some(V::Null) => {}
                Some(V::Str(s)) => {
                    // a string is hashed by the JSON value it holds; when the scanner refuses
                    // it (not JSON, or not sure), the reference decides
                    match parse_text(s) {
                        Ok(v) => f.args_hash = Some(hex32(&Sha256::digest(canonical_of(&v)))),
                        Err(Bail) => f.py_hash = true,
                    }
                    f.text = Some(Cow::Borrowed(s.as_ref()));
                }
                Some(args) => {
                    let text = canonical_of(args);
                    f.args_hash = Some(hex32(&Sha256::digest(&text)));
                    f.text = Some(Cow::Owned(text));
                }
            }
            f.ref_id = str_of(get(b"callId"));
            f.tool_name = str_of(get(b"name"));
        }
        b"tool/result" => {
            if let Some(d) = data {
                let (r, e, text) = tool_result(d);
                f.ref_id = r;
                f.is_error = e;
                f.text = text;
            }
        }
        b"turn/end" => {
            if let Some(r) = get(b"reason").filter(|r| r.is_obj()) {
                f.is_error = r.get(b"kind").and_then(|k| k.str()) == Some(b"error");
            }
        }
        b"user/message" => {
            f.text = text_parts(get(b"content"));
            f.event_id = str_of(get(b"id"));
        }
        b"assistant/message" => match get(b"message").filter(|m| m.is_obj()) {
            Some(msg) => {
                f.text = text_parts(msg.get(b"content"));
                f.event_id = str_of(msg.get(b"id"));
            }
            None => f.text = text_parts(get(b"content")),
        },
        b"approval/asked" => {
            f.ref_id = str_of(get(b"id"));
            f.tool_name = str_of(get(b"toolName"));
        }
        b"approval/decided" => f.ref_id = str_of(get(b"id")),
        b"tool-workflow/agent-start" => f.ref_id = str_of(get(b"childId")),
        _ => {}
    }
    f.cache_key = str_of(ck);
    Ok(f)
}

#[inline]
fn push_opt(c: &mut StrCol, v: Option<&[u8]>) {
    match v {
        Some(s) => c.push(s),
        None => c.push_null(),
    }
}

/// A blank line for the reference: nothing but ASCII whitespace (`bytes.strip()`).
fn blank(raw: &[u8]) -> bool {
    raw.iter()
        .all(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

const PACKED_TOP: [&[u8]; 4] = [b"data", b"seq0", b"time0", b"type"];

/// Files from this size on are scanned in parallel chunks (split at line ends).
const PARALLEL_FROM: usize = 4 << 20;

/// Scan a whole toh file on replaykit's threads ([`crate::par::threads`]). None: the
/// reference must read it (see the module docs).
pub fn scan_file(file: &[u8]) -> Option<TohOut> {
    scan_file_with(file, crate::par::threads())
}

/// Bytes per chunk of a file scanned in parallel, at least.
const CHUNK_FROM: usize = 1 << 20;

/// [`scan_file`] on at most `threads` threads: the file is cut at line ends into one chunk
/// per thread (of at least [`CHUNK_FROM`] bytes), each scanned on its own, then they are
/// joined in order (line numbers, implicit seqs and the envelope mode carried over) and the
/// model-call ids written in one pass over all events.
pub fn scan_file_with(file: &[u8], threads: usize) -> Option<TohOut> {
    let threads = if file.len() < PARALLEL_FROM {
        1
    } else {
        threads.max(1)
    };
    let mut cuts = vec![0usize];
    // one chunk per thread, cut by bytes: the join below copies every chunk but the first
    // (serially), so more chunks than threads would cost more than their balance gains
    let k = threads.min(file.len() / CHUNK_FROM).max(1);
    for i in 1..k {
        let at = (file.len() * i / k).max(*cuts.last()?);
        let next = memchr::memchr(b'\n', &file[at..]).map_or(file.len(), |k| at + k + 1);
        if next < file.len() && next > *cuts.last()? {
            cuts.push(next);
        }
    }
    cuts.push(file.len());
    let spans: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    // the first chunk's columns are reserved for the whole file: the others are appended to
    // them
    let mut parts: Vec<Option<Chunk>> = crate::par::map_ranges(&spans, threads, |a, b| {
        let first = a == 0;
        scan_chunk(file, a, b, first, if first { file.len() } else { b - a })
    });
    let mut first = parts.remove(0)?;
    if !first.header {
        return None; // (a first chunk of blank lines only: the reference reads the file)
    }
    for part in parts {
        let part = part?;
        first.append(part, threads)?;
    }
    let mut out = first.out;
    fill_call_ids(&mut out);
    if out.overflows() {
        return None;
    }
    Some(out)
}

/// One chunk of a file scanned: its events (line numbers within the chunk, implicit seqs from
/// 0), its line count, envelope mode and whether it held the session header.
struct Chunk {
    out: TohOut,
    lines: i64,
    env_full: Option<bool>,
    header: bool,
}

impl Chunk {
    /// Append the next chunk, each column on a task of its own (the largest first) on up to
    /// `threads` threads: None when the two envelope modes differ (the reference quarantines
    /// the later lines).
    fn append(&mut self, o: Chunk, threads: usize) -> Option<()> {
        match (self.env_full, o.env_full) {
            (Some(a), Some(b)) if a != b => return None,
            (None, b) => self.env_full = b,
            _ => {}
        }
        let events = self.out.len() as i64;
        let full = self.env_full == Some(true);
        let lines = self.lines;
        let b = &o.out;
        // every column joined on a task of its own: the copy into fresh pages is bound by
        // page faults, not bandwidth, so the columns are spread over the threads (the payload,
        // most of the bytes, first)
        let TohOut {
            line,
            seq,
            time,
            typ,
            payload,
            turn,
            step,
            chunk_type,
            text,
            ref_id,
            tool_name,
            args_hash,
            cache_key,
            is_error,
            finish,
            input_tokens,
            output_tokens,
            event_id,
            call_kind,
            py_hash_rows,
            ..
        } = &mut self.out;
        type Task<'t> = Box<dyn FnOnce() + Send + 't>;
        let strs: [(&mut StrCol, &StrCol); 10] = [
            (typ, &b.typ),
            (chunk_type, &b.chunk_type),
            (ref_id, &b.ref_id),
            (tool_name, &b.tool_name),
            (args_hash, &b.args_hash),
            (cache_key, &b.cache_key),
            (finish, &b.finish),
            (event_id, &b.event_id),
            (text, &b.text),
            (payload, &b.payload),
        ];
        let mut tasks: Vec<Task<'_>> = Vec::with_capacity(20);
        for (a, c) in strs.into_iter().rev() {
            tasks.push(Box::new(move || a.append(c)));
        }
        tasks.push(Box::new(move || {
            line.extend(b.line.iter().map(|l| l + lines));
            call_kind.extend_from_slice(&b.call_kind);
            py_hash_rows.extend(b.py_hash_rows.iter().map(|r| r + events));
        }));
        tasks.push(Box::new(move || {
            if full {
                seq.extend_from_slice(&b.seq);
            } else {
                seq.extend(b.seq.iter().map(|s| s + events));
            }
            time.append(&b.time);
        }));
        tasks.push(Box::new(move || {
            turn.append(&b.turn);
            step.append(&b.step);
            input_tokens.append(&b.input_tokens);
            output_tokens.append(&b.output_tokens);
            is_error.values.append(&b.is_error.values);
        }));
        crate::par::run_tasks(tasks, threads, |f| f());
        self.lines += o.lines;
        Some(())
    }
}

/// The model-call ids of all events (see [`TohOut::call_id`]), from their kinds and steps.
fn fill_call_ids(out: &mut TohOut) {
    let n = out.len();
    let mut col = StrCol::new(false, n, n * 12);
    let mut groups: HashMap<(i64, i64), (i64, Option<i64>)> = HashMap::new();
    let null = i32::MIN as i64;
    let mut num = itoa::Buffer::new();
    let mut prev: Option<(u8, i64, i64)> = None; // the last event's (kind, turn, step) if it
                                                 // was a chunk whose id is in `col`
    for i in 0..n {
        let kind = out.call_kind[i];
        if kind == CALL_OTHER {
            col.push_null();
            prev = None;
            continue;
        }
        let key = (
            out.turn.get(i).unwrap_or(null),
            out.step.get(i).unwrap_or(null),
        );
        if kind == CALL_CHUNK && prev == Some((CALL_CHUNK, key.0, key.1)) {
            // a chunk after a (non-finish) chunk of its step: the same call, the same id
            col.repeat_last();
            continue;
        }
        let g = groups.entry(key).or_insert((0, None));
        let k = if kind == CALL_MESSAGE {
            match g.1 {
                Some(k) => k,
                None => {
                    col.push_null();
                    prev = None;
                    continue;
                }
            }
        } else {
            let k = g.0;
            if kind == CALL_FINISH {
                g.0 += 1;
            }
            g.1 = Some(k);
            k
        };
        let d = &mut col.data;
        d.push(b't');
        if key.0 != null {
            d.extend_from_slice(num.format(key.0).as_bytes());
        }
        d.extend_from_slice(b".s");
        if key.1 != null {
            d.extend_from_slice(num.format(key.1).as_bytes());
        }
        d.extend_from_slice(b".c");
        d.extend_from_slice(num.format(k).as_bytes());
        col.commit();
        prev = (kind == CALL_CHUNK).then_some((CALL_CHUNK, key.0, key.1));
    }
    out.call_id = col;
}

const CALL_OTHER: u8 = 0;
const CALL_CHUNK: u8 = 1;
const CALL_FINISH: u8 = 2;
const CALL_MESSAGE: u8 = 3;

/// Scan the lines of `file[start..end]` (`first`: the file's first chunk, which holds the
/// header; `reserve`: the bytes its columns are reserved for). None: the reference must read
/// the file.
fn scan_chunk(
    file: &[u8],
    start: usize,
    end_all: usize,
    first: bool,
    reserve: usize,
) -> Option<Chunk> {
    let part = &file[start..end_all];
    if std::str::from_utf8(part).is_err() {
        return None;
    }
    let n_lines_est = memchr::memchr_iter(b'\n', part).count() + 1;
    let scale = reserve / part.len().max(1);
    let mut out = TohOut::new(n_lines_est * scale.max(1), reserve);
    let mut header = !first;
    // the envelope mode: None until the first event line, then whether it carries seq
    let mut env_full: Option<bool> = None;
    let mut implicit: i64 = 0;
    let mut start = start;
    let mut lineno: i64 = 0;
    let mut buf: Vec<u8> = Vec::new();
    while start < end_all {
        let end = memchr::memchr(b'\n', &file[start..end_all]).map_or(end_all, |k| start + k);
        lineno += 1;
        let mut s = start;
        if first && lineno == 1 && file[s..end].starts_with(b"\xef\xbb\xbf") {
            s += 3;
        }
        let raw = &file[s..end];
        start = end + 1;
        if blank(raw) {
            continue;
        }
        if header && raw.starts_with(PACKED_HEAD) {
            match fast_packed(
                raw,
                lineno,
                &mut env_full,
                &mut implicit,
                &mut out,
                &mut buf,
            ) {
                Ok(true) => continue,
                Ok(false) => {} // another layout: read below
                Err(Bail) => return None,
            }
        }
        let obj = parse_text(raw).ok()?;
        if !obj.is_obj() {
            return None; // a header that is not an object, or an event that is not one
        }
        if !header {
            header = true;
            out.header = (s, end);
            continue;
        }
        let t = match obj.get(b"type") {
            Some(V::Str(t)) if !t.is_empty() => t.as_ref(),
            _ => return None,
        };
        let code = match t {
            b"text-chunks" => Some(0u8),
            b"reasoning-chunks" => Some(1),
            b"tool-call-chunks" => Some(2),
            _ => None,
        };
        if let Some(code) = code {
            packed(
                &obj,
                code,
                lineno,
                &mut env_full,
                &mut implicit,
                &mut out,
                &mut buf,
            )?;
            continue;
        }
        let seq = match obj.get(b"seq") {
            None | Some(V::Null) => None,
            Some(v) => Some(v.i64().filter(|&x| x >= 0)?),
        };
        let time = match obj.get(b"time") {
            None | Some(V::Null) => None,
            Some(v) => Some(epoch_ms(v)?),
        };
        match env_full {
            None => env_full = Some(seq.is_some()),
            Some(full) if full != seq.is_some() => return None,
            _ => {}
        }
        let data = obj.get(b"data").filter(|d| d.is_obj());
        let turn = i32_of(data.and_then(|d| d.get(b"turn")));
        let step = i32_of(data.and_then(|d| d.get(b"step")));
        let f = decode_event(&obj, t).ok()?;
        let row = out.len();
        out.line.push(lineno);
        out.seq.push(seq.unwrap_or(implicit));
        implicit += 1;
        out.time.push(time);
        out.typ.push(t);
        buf.clear();
        write(&obj, &mut buf);
        out.payload.push(&buf);
        out.turn.push(turn);
        out.step.push(step);
        push_opt(&mut out.chunk_type, f.chunk_type.as_deref());
        push_opt(&mut out.text, f.text.as_deref());
        push_opt(&mut out.ref_id, f.ref_id);
        push_opt(&mut out.tool_name, f.tool_name);
        push_opt(&mut out.args_hash, f.args_hash.as_ref().map(|h| &h[..]));
        if f.py_hash {
            out.py_hash_rows.push(row as i64);
        }
        push_opt(&mut out.cache_key, f.cache_key);
        out.is_error.push(f.is_error);
        push_opt(&mut out.finish, f.finish);
        out.input_tokens.push(f.input_tokens);
        out.output_tokens.push(f.output_tokens);
        push_opt(&mut out.event_id, f.event_id);
        out.call_kind.push(match t {
            b"assistant/chunk" if f.chunk_type.as_deref() == Some(b"finish") => CALL_FINISH,
            b"assistant/chunk" => CALL_CHUNK,
            b"assistant/message" => CALL_MESSAGE,
            _ => CALL_OTHER,
        });
    }
    Some(Chunk {
        out,
        lines: lineno,
        env_full,
        header,
    })
}

/// A packed row (`code`: 0 text, 1 reasoning, 2 tool-call chunks) validated as
/// `_packed_problem` does and expanded into its members. Err: the reference quarantines it.
fn packed(
    obj: &V<'_>,
    code: u8,
    lineno: i64,
    env_full: &mut Option<bool>,
    implicit: &mut i64,
    out: &mut TohOut,
    buf: &mut Vec<u8>,
) -> Option<()> {
    let V::Obj(top) = obj else { return None };
    if top.iter().any(|(k, _)| !PACKED_TOP.contains(&k.as_ref())) {
        return None;
    }
    let data = obj.get(b"data")?;
    let V::Obj(dm) = data else { return None };
    let key: &[u8] = if code == 2 { b"args" } else { b"texts" };
    let allowed: &[&[u8]] = if code == 2 {
        &[b"args", b"dt", b"id", b"index", b"name", b"step", b"turn"]
    } else {
        &[b"dt", b"index", b"step", b"texts", b"turn"]
    };
    // members are sorted and unique: equal to the allowed set when the keys are the same list
    if dm.len() != allowed.len() || dm.iter().zip(allowed).any(|((k, _), a)| k.as_ref() != *a) {
        return None;
    }
    let V::Arr(members) = data.get(key)? else {
        return None;
    };
    if members.is_empty() || !members.iter().all(|m| matches!(m, V::Str(_))) {
        return None;
    }
    let V::Arr(dt) = data.get(b"dt")? else {
        return None;
    };
    let mut gaps = Vec::with_capacity(dt.len());
    for g in dt {
        gaps.push(g.i64()?); // an integer that fits 64 bits
    }
    if gaps.len() != members.len() - 1 {
        return None;
    }
    let turn = i32_of(data.get(b"turn"))?;
    let step = i32_of(data.get(b"step"))?;
    let index = i32_of(data.get(b"index"))?;
    let (id, name) = if code == 2 {
        (data.get(b"id")?.str()?, data.get(b"name")?.str()?)
    } else {
        (&b""[..], &b""[..])
    };
    let seq0 = match obj.get(b"seq0") {
        None | Some(V::Null) => None,
        Some(v) => {
            let x = v.i64()?;
            if x < 0 {
                return None;
            }
            x.checked_add(members.len() as i64 - 1)?;
            Some(x)
        }
    };
    let time0 = match obj.get(b"time0") {
        None | Some(V::Null) => None,
        Some(v) => {
            let x = v.i64()?;
            if !(EPOCH_MS_MIN..=EPOCH_MS_MAX).contains(&x) {
                return None;
            }
            Some(x)
        }
    };
    // member times: time0 + the running sum of the gaps, each within years 1 to 9999
    let mut times = Vec::new();
    if let Some(t0) = time0 {
        let mut t = t0 as i128;
        times.push(t0);
        for &g in &gaps {
            t += g as i128;
            if t < EPOCH_MS_MIN as i128 || t > EPOCH_MS_MAX as i128 {
                return None;
            }
            times.push(t as i64);
        }
    }
    let texts: Vec<&Cow<'_, [u8]>> = members
        .iter()
        .map(|m| match m {
            V::Str(t) => Some(t),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let row = PackedRow {
        code,
        turn,
        step,
        index,
        id,
        name,
        seq0,
        time0: time0.map(|_| times),
    };
    emit_packed(&row, &texts, lineno, env_full, implicit, out, buf)
}

const PACKED_HEAD: &[u8] = b"{\"type\":\"";

/// A packed row in the harness's own layout (`{"type":"text-chunks","data":{"turn":1,"step":1,
/// "index":0,"dt":[...],"texts":[...]}}`, tool-call rows with `"id"`, `"name"`, `"args"`),
/// read without building its value: Ok(true) when it was that layout and met the packed rules
/// (its members are appended), Ok(false) when the general reading must decide, Err when the
/// file must go to the reference (a mixed envelope).
fn fast_packed(
    raw: &[u8],
    lineno: i64,
    env_full: &mut Option<bool>,
    implicit: &mut i64,
    out: &mut TohOut,
    buf: &mut Vec<u8>,
) -> R<bool> {
    const HEADS: [(&[u8], u8); 3] = [
        (b"{\"type\":\"text-chunks\",\"data\":{\"turn\":", 0),
        (b"{\"type\":\"reasoning-chunks\",\"data\":{\"turn\":", 1),
        (b"{\"type\":\"tool-call-chunks\",\"data\":{\"turn\":", 2),
    ];
    let Some(&(head, code)) = HEADS.iter().find(|(h, _)| raw.starts_with(h)) else {
        return Ok(false);
    };
    let mut sc = Scanner::new(raw);
    sc.pos = head.len();
    type Got<'r> = (
        i64,
        i64,
        i64,
        Cow<'r, [u8]>,
        Cow<'r, [u8]>,
        Vec<Cow<'r, [u8]>>,
    );
    let got = (|| -> R<Got<'_>> {
        fn lit(sc: &mut Scanner<'_>, t: &[u8]) -> R<()> {
            if sc.s[sc.pos..].starts_with(t) {
                sc.pos += t.len();
                Ok(())
            } else {
                Err(Bail)
            }
        }
        fn int(sc: &mut Scanner<'_>) -> R<i64> {
            let n = sc.number()?;
            if !n.integer {
                return Err(Bail);
            }
            parse_i64(&sc.s[n.start..n.end]).ok_or(Bail)
        }
        fn i32v(x: i64) -> R<i64> {
            if (i32::MIN as i64..=i32::MAX as i64).contains(&x) {
                Ok(x)
            } else {
                Err(Bail)
            }
        }
        let turn = i32v(int(&mut sc)?)?;
        lit(&mut sc, b",\"step\":")?;
        let step = i32v(int(&mut sc)?)?;
        lit(&mut sc, b",\"index\":")?;
        let index = i32v(int(&mut sc)?)?;
        lit(&mut sc, b",\"dt\":[")?;
        let mut gaps = Vec::new();
        if sc.peek() == Some(b']') {
            sc.pos += 1;
        } else {
            loop {
                gaps.push(int(&mut sc)?);
                match sc.peek() {
                    Some(b',') => sc.pos += 1,
                    Some(b']') => {
                        sc.pos += 1;
                        break;
                    }
                    _ => return Err(Bail),
                }
            }
        }
        let (mut id, mut name) = (Cow::Borrowed(&b""[..]), Cow::Borrowed(&b""[..]));
        if code == 2 {
            lit(&mut sc, b",\"id\":")?;
            id = decoded(raw, sc.string()?);
            lit(&mut sc, b",\"name\":")?;
            name = decoded(raw, sc.string()?);
            lit(&mut sc, b",\"args\":[")?;
        } else {
            lit(&mut sc, b",\"texts\":[")?;
        }
        let mut texts = Vec::with_capacity(gaps.len() + 1);
        loop {
            texts.push(decoded(raw, sc.string()?));
            match sc.peek() {
                Some(b',') => sc.pos += 1,
                Some(b']') => {
                    sc.pos += 1;
                    break;
                }
                _ => return Err(Bail),
            }
        }
        lit(&mut sc, b"}}")?;
        if sc.pos != raw.len() || gaps.len() + 1 != texts.len() {
            return Err(Bail);
        }
        Ok((turn, step, index, id, name, texts))
    })();
    let Ok((turn, step, index, id, name, texts)) = got else {
        return Ok(false);
    };
    let row = PackedRow {
        code,
        turn,
        step,
        index,
        id: &id,
        name: &name,
        seq0: None,
        time0: None,
    };
    let texts: Vec<&Cow<'_, [u8]>> = texts.iter().collect();
    emit_packed(&row, &texts, lineno, env_full, implicit, out, buf).ok_or(Bail)?;
    Ok(true)
}

/// A validated packed row (its members apart).
struct PackedRow<'a> {
    code: u8,
    turn: i64,
    step: i64,
    index: i64,
    /// decoded (code 2; else empty)
    id: &'a [u8],
    name: &'a [u8],
    seq0: Option<i64>,
    /// the members' times (time0 and the running sums of the gaps)
    time0: Option<Vec<i64>>,
}

/// The members of a packed row appended as events (their canonical payloads written as
/// `_packed._member_payloads` does). None: a mixed envelope (the reference quarantines it).
fn emit_packed(
    p: &PackedRow<'_>,
    texts: &[&Cow<'_, [u8]>],
    lineno: i64,
    env_full: &mut Option<bool>,
    implicit: &mut i64,
    out: &mut TohOut,
    buf: &mut Vec<u8>,
) -> Option<()> {
    let (code, turn, step, index, id, name, seq0) =
        (p.code, p.turn, p.step, p.index, p.id, p.name, p.seq0);
    match *env_full {
        None => *env_full = Some(seq0.is_some()),
        Some(full) if full != seq0.is_some() => return None,
        _ => {}
    }
    let (ctype, tname): (&[u8], &[u8]) = match code {
        0 => (b"text", b"text-delta"),
        1 => (b"reasoning", b"reasoning-delta"),
        _ => (b"tool-call", b"tool-call-delta"),
    };
    let mut num = itoa::Buffer::new();
    let turn_s = num.format(turn).as_bytes().to_vec();
    let step_s = num.format(step).as_bytes().to_vec();
    let index_s = num.format(index).as_bytes().to_vec();
    for (k, &text) in texts.iter().enumerate() {
        out.line.push(lineno);
        let seq = seq0.map(|s| s + k as i64);
        out.seq.push(seq.unwrap_or(*implicit));
        *implicit += 1;
        let tm = p.time0.as_ref().map(|t| t[k]);
        out.time.push(tm.map(|x| x as f64));
        out.typ.push(b"assistant/chunk");
        buf.clear();
        if code == 2 {
            buf.extend_from_slice(b"{\"data\":{\"chunk\":{\"argumentsDelta\":");
            json_str(text, buf);
            buf.extend_from_slice(b",\"id\":");
            write_str(id, buf);
            buf.extend_from_slice(b",\"index\":");
            buf.extend_from_slice(&index_s);
            buf.extend_from_slice(b",\"name\":");
            write_str(name, buf);
            buf.extend_from_slice(b",\"type\":\"");
        } else {
            buf.extend_from_slice(b"{\"data\":{\"chunk\":{\"index\":");
            buf.extend_from_slice(&index_s);
            buf.extend_from_slice(b",\"text\":");
            json_str(text, buf);
            buf.extend_from_slice(b",\"type\":\"");
        }
        buf.extend_from_slice(tname);
        buf.extend_from_slice(b"\"},\"step\":");
        buf.extend_from_slice(&step_s);
        buf.extend_from_slice(b",\"turn\":");
        buf.extend_from_slice(&turn_s);
        buf.push(b'}');
        if let Some(s) = seq {
            buf.extend_from_slice(b",\"seq\":");
            buf.extend_from_slice(num.format(s).as_bytes());
        }
        if let Some(t) = tm {
            buf.extend_from_slice(b",\"time\":");
            buf.extend_from_slice(num.format(t).as_bytes());
        }
        buf.extend_from_slice(b",\"type\":\"assistant/chunk\"}");
        out.payload.push(buf);
        out.turn.push(Some(turn));
        out.step.push(Some(step));
        out.chunk_type.push(ctype);
        out.text.push(text);
        out.ref_id.push_null();
        out.tool_name.push_null();
        out.args_hash.push_null();
        out.cache_key.push_null();
        out.is_error.push(false);
        out.finish.push_null();
        out.input_tokens.push(None);
        out.output_tokens.push(None);
        out.event_id.push_null();
        out.call_kind.push(CALL_CHUNK);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(t: &str) -> String {
        let v = parse_text(t.as_bytes()).unwrap();
        String::from_utf8(canonical_of(&v)).unwrap()
    }

    fn strs(c: &StrCol) -> Vec<Option<String>> {
        let offs: Vec<usize> = match &c.offsets {
            crate::cols::Offsets::I32(v) => v.iter().map(|&x| x as usize).collect(),
            crate::cols::Offsets::I64(v) => v.iter().map(|&x| x as usize).collect(),
        };
        (0..c.len())
            .map(|i| {
                let valid = c.valid.bytes[i / 8] & (1 << (i % 8)) != 0;
                valid.then(|| String::from_utf8(c.data[offs[i]..offs[i + 1]].to_vec()).unwrap())
            })
            .collect()
    }

    #[test]
    fn canonical_sorted_last_key_wins() {
        assert_eq!(
            canon(r#"{"b":1,"a":{"y":-0,"x":1.50},"b":2}"#),
            r#"{"a":{"x":1.5,"y":0},"b":2}"#
        );
        assert_eq!(
            canon(r#"["\u00e9\/", 1E2, 12345678901234567890123]"#),
            "[\"é/\",100.0,12345678901234567890123]"
        );
    }

    const HEAD: &str = "{\"type\":\"session\",\"id\":\"s1\"}\n";

    #[test]
    fn rows_and_packed_members() {
        let text = format!(
            "\u{feff}{HEAD}\n{}\n{}\n{}\n",
            r#"{"type":"step/start","data":{"turn":1,"step":2}}"#,
            r#"{"type":"text-chunks","data":{"turn":1,"step":2,"index":0,"dt":[5],"texts":["a","b\n"]}}"#,
            r#"{"type":"assistant/chunk","data":{"turn":1,"step":2,"chunk":{"type":"finish","reason":{"kind":"error"}}}}"#,
        );
        let out = scan_file(text.as_bytes()).unwrap();
        assert_eq!(out.line, vec![3, 4, 4, 5]);
        assert_eq!(out.seq, vec![0, 1, 2, 3]);
        let p = strs(&out.payload);
        assert_eq!(
            p[2].as_deref(),
            Some(
                r#"{"data":{"chunk":{"index":0,"text":"b\n","type":"text-delta"},"step":2,"turn":1},"type":"assistant/chunk"}"#
            )
        );
        assert_eq!(strs(&out.finish)[3].as_deref(), Some("error"));
        assert_eq!(strs(&out.chunk_type)[1].as_deref(), Some("text"));
    }

    #[test]
    fn refuses_what_the_reference_quarantines() {
        for bad in [
            "",
            "\n\n",
            "{\"type\":\"session\"",
            "[1]\n",
            &format!("{HEAD}{{\"data\":1}}\n"),
            &format!("{HEAD}{{\"type\":\"\"}}\n"),
            &format!("{HEAD}{{\"type\":\"x\",\"seq\":-1}}\n"),
            &format!("{HEAD}{{\"type\":\"x\",\"seq\":1}}\n{{\"type\":\"x\"}}\n"),
            &format!("{HEAD}{{\"type\":\"x\",\"time\":1e300}}\n"),
            &format!("{HEAD}{{\"type\":\"x\",\"a\":NaN}}\n"),
            &format!("{HEAD}\u{feff}{{\"type\":\"x\"}}\n"),
            &format!("{HEAD}{{\"type\":\"text-chunks\",\"data\":{{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[],\"texts\":[]}}}}\n"),
            &format!("{HEAD}{{\"type\":\"assistant/chunk\",\"data\":{{\"chunk\":{{\"type\":\"usage\",\"usage\":{{\"inputTokens\":99999999999999999999}}}}}}}}\n"),
        ] {
            assert!(scan_file(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(scan_file(b"{\"type\":\"session\"}\n\xff\n").is_none());
    }

    #[test]
    fn tool_fields() {
        let text = format!(
            "{HEAD}{}\n{}\n",
            r#"{"type":"tool/call","data":{"callId":"c1","name":"ls","arguments":{"b":1,"a":[true]}}}"#,
            r#"{"type":"tool/result","data":{"message":{"content":[{"toolCallId":"c1","content":[{"type":"text","text":"x"}]},{"content":{"k":1}}]}}}"#,
        );
        let out = scan_file(text.as_bytes()).unwrap();
        assert_eq!(strs(&out.text)[0].as_deref(), Some(r#"{"a":[true],"b":1}"#));
        assert_eq!(strs(&out.ref_id)[1].as_deref(), Some("c1"));
        assert_eq!(strs(&out.text)[1].as_deref(), Some("x\n{\"k\":1}"));
        assert!(strs(&out.args_hash)[0].is_some());
    }

    fn i64s(c: &I64Col) -> Vec<Option<i64>> {
        (0..c.values.len()).map(|i| c.get(i)).collect()
    }

    #[test]
    fn chunks_join_like_one_pass() {
        let mut text = String::from("{\"type\":\"session\",\"id\":\"s\"}\n");
        let lines = [
            r#"{"type":"step/start","data":{"turn":1,"step":2}}"#,
            r#"{"type":"text-chunks","data":{"turn":1,"step":2,"index":0,"dt":[5,1],"texts":["a","b\n","c"]}}"#,
            r#"{"type":"assistant/chunk","data":{"turn":1,"step":2,"chunk":{"type":"finish","reason":"stop"}}}"#,
            r#"{"type":"assistant/message","data":{"turn":1,"step":2,"message":{"id":"m"}}}"#,
            r#"{"type":"assistant/chunk","data":{"step":3,"chunk":{"type":"usage","usage":{"inputTokens":1}}}}"#,
            "",
            r#"{"type":"tool/call","time":1700000000000.5,"data":{"turn":2,"arguments":"{\"a\": 1}"}}"#,
        ];
        let mut i = 0;
        while text.len() < (PARALLEL_FROM * 5) / 2 {
            text.push_str(lines[i % lines.len()]);
            text.push('\n');
            i += 1;
        }
        let one = scan_file_with(text.as_bytes(), 1).unwrap();
        for threads in [2, 3, 4] {
            let many = scan_file_with(text.as_bytes(), threads).unwrap();
            assert_eq!(one.line, many.line);
            assert_eq!(one.seq, many.seq);
            assert_eq!(strs(&one.payload), strs(&many.payload));
            assert_eq!(strs(&one.call_id), strs(&many.call_id));
            assert_eq!(strs(&one.text), strs(&many.text));
            assert_eq!(strs(&one.args_hash), strs(&many.args_hash));
            assert_eq!(i64s(&one.turn), i64s(&many.turn));
            assert_eq!(i64s(&one.input_tokens), i64s(&many.input_tokens));
            assert_eq!(one.time.values, many.time.values);
            assert_eq!(one.time.valid.bytes, many.time.valid.bytes);
            assert_eq!(one.is_error.values.bytes, many.is_error.values.bytes);
            assert_eq!(one.py_hash_rows, many.py_hash_rows);
            // every other column, joined on its own task
            for (a, b) in [
                (&one.typ, &many.typ),
                (&one.chunk_type, &many.chunk_type),
                (&one.ref_id, &many.ref_id),
                (&one.tool_name, &many.tool_name),
                (&one.cache_key, &many.cache_key),
                (&one.finish, &many.finish),
                (&one.event_id, &many.event_id),
            ] {
                assert_eq!(strs(a), strs(b));
            }
            assert_eq!(i64s(&one.step), i64s(&many.step));
            assert_eq!(i64s(&one.output_tokens), i64s(&many.output_tokens));
            assert_eq!(one.call_kind, many.call_kind);
        }
        let ids = strs(&one.call_id);
        assert_eq!(ids[1].as_deref(), Some("t1.s2.c0")); // members of the packed row
        assert_eq!(ids[4].as_deref(), Some("t1.s2.c0")); // the finish chunk closes call 0
        assert_eq!(ids[5].as_deref(), Some("t1.s2.c0")); // the message: that call
        assert_eq!(ids[6].as_deref(), Some("t.s3.c0")); // no turn
        assert_eq!(ids[9].as_deref(), Some("t1.s2.c1")); // the next call of step 2
                                                         // a mixed envelope across chunks is refused
        let mut mixed = text.clone();
        mixed.push_str("{\"type\":\"x\",\"seq\":5}\n");
        assert!(scan_file_with(mixed.as_bytes(), 3).is_none());
    }

    #[test]
    fn damaged_samples_never_panic() {
        // every truncation and a spread of byte flips of a bundled sample, as they are and
        // scanned in chunks: refused or read, never a panic
        let sample = include_bytes!("../../data/toh/garden-report/session.jsonl");
        let base = &sample[..sample.len().min(6000)];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for cut in (0..base.len()).step_by(7) {
            let _ = scan_file_with(&base[..cut], 1);
        }
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = base.to_vec();
            let at = (x as usize) % b.len();
            b[at] = [
                b'"', b'\\', b'{', b'}', b'[', b',', b'\n', 0xff, b'0', b'-', b'e',
            ][(x >> 40) as usize % 11];
            if let Some(out) = scan_file_with(&b, 1) {
                assert_eq!(out.payload.len(), out.len());
                assert_eq!(out.call_id.len(), out.len());
            }
        }
    }
}
