//! Tracing-platform exports in JSON Lines (`replaykit.io._platform`): the per-format mapping of
//! a span / run / observation line to the canonical columns, over the shared line split and
//! value tree of `lines.rs` (one tokenizer, `json.rs`; no second parser here).
//!
//! Phoenix span exports (`replaykit.io.phoenix`, both the span-dataframe and the REST shapes)
//! are mapped row for row as `phoenix._trace_rows` maps them. The scanner decides a file only
//! when it is sure: every line a JSON object the reference accepts, every span with a string
//! trace and span id, no span twice, and no shape whose mapping needs the reference's message
//! readers (an LLM span that succeeded but records no output messages, attributes kept as JSON
//! text, float token counts or times, non-ASCII kinds ...). Anything else refuses the file
//! whole, and the caller reads it with the reference, which reports what is wrong with it.
//!
//! A trace whose spans sit in several files is one run in the reference (grouped across
//! files): a file is decided natively only when none of its traces appears in any other file
//! of the call ([`scan_phoenix_files`] checks this across all files).

use std::collections::{HashMap, HashSet};

use crate::cols::{BoolCol, I64Col, StrCol};
use crate::json::{parse_i64, Bail, R};
use crate::lines::{hash32, lines, objects, parse_text, truthy, write, V};

/// One run's header: `(run_id, created_at, attrs as canonical JSON)`.
pub type RunHead = (Vec<u8>, Option<Vec<u8>>, Vec<u8>);

/// The rows of one or more files, in the reference's order, with their runs.
pub struct PlatOut {
    /// one header per run
    pub runs: Vec<RunHead>,
    pub run_id: StrCol,
    pub source: StrCol,
    pub seq: Vec<i64>,
    pub line: Vec<i64>,
    pub typ: StrCol,
    pub kind: StrCol,
    pub ts: StrCol,
    pub turn: I64Col,
    pub step: I64Col,
    pub event_id: StrCol,
    pub ref_id: StrCol,
    pub tool_name: StrCol,
    pub args_hash: StrCol,
    pub is_error: BoolCol,
    pub finish: StrCol,
    pub input_tokens: I64Col,
    pub output_tokens: I64Col,
    pub text: StrCol,
    pub payload: StrCol,
}

impl PlatOut {
    fn new(rows: usize, bytes: usize) -> Self {
        let s = || StrCol::new(false, rows, rows * 8);
        PlatOut {
            runs: Vec::new(),
            run_id: s(),
            source: s(),
            seq: Vec::with_capacity(rows),
            line: Vec::with_capacity(rows),
            typ: s(),
            kind: s(),
            ts: s(),
            turn: I64Col::with_capacity(rows),
            step: I64Col::with_capacity(rows),
            event_id: s(),
            ref_id: s(),
            tool_name: s(),
            args_hash: s(),
            is_error: BoolCol::default(),
            finish: s(),
            input_tokens: I64Col::with_capacity(rows),
            output_tokens: I64Col::with_capacity(rows),
            text: StrCol::new(true, rows, bytes / 4),
            payload: StrCol::new(true, rows, bytes + bytes / 4),
        }
    }

    /// Rows made.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    fn append(&mut self, o: PlatOut) {
        self.runs.extend(o.runs);
        self.seq.extend_from_slice(&o.seq);
        self.line.extend_from_slice(&o.line);
        for (a, b) in [
            (&mut self.run_id, &o.run_id),
            (&mut self.source, &o.source),
            (&mut self.typ, &o.typ),
            (&mut self.kind, &o.kind),
            (&mut self.ts, &o.ts),
            (&mut self.event_id, &o.event_id),
            (&mut self.ref_id, &o.ref_id),
            (&mut self.tool_name, &o.tool_name),
            (&mut self.args_hash, &o.args_hash),
            (&mut self.finish, &o.finish),
            (&mut self.text, &o.text),
            (&mut self.payload, &o.payload),
        ] {
            a.append(b);
        }
        for (a, b) in [
            (&mut self.turn, &o.turn),
            (&mut self.step, &o.step),
            (&mut self.input_tokens, &o.input_tokens),
            (&mut self.output_tokens, &o.output_tokens),
        ] {
            a.append(b);
        }
        self.is_error.values.append(&o.is_error.values);
    }

    fn overflows(&self) -> bool {
        [
            &self.run_id,
            &self.source,
            &self.typ,
            &self.kind,
            &self.ts,
            &self.event_id,
            &self.ref_id,
            &self.tool_name,
            &self.args_hash,
            &self.finish,
        ]
        .iter()
        .any(|c| c.overflows())
    }
}

/// One row before it is written into the columns (text values owned).
#[derive(Default)]
struct Row {
    kind: &'static [u8],
    ts: Option<Vec<u8>>,
    event_id: Option<Vec<u8>>,
    ref_id: Option<Vec<u8>>,
    tool_name: Option<Vec<u8>>,
    args_hash: Option<Vec<u8>>,
    is_error: bool,
    step: Option<i64>,
    finish: Option<Vec<u8>>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    text: Option<Vec<u8>>,
    payload: Vec<u8>,
}

fn opt(c: &mut StrCol, v: &Option<Vec<u8>>) {
    match v {
        Some(s) => c.push(s),
        None => c.push_null(),
    }
}

impl PlatOut {
    fn push(&mut self, run_id: &[u8], source: &[u8], line: usize, typ: &[u8], seq: i64, r: &Row) {
        self.run_id.push(run_id);
        self.source.push(source);
        self.seq.push(seq);
        self.line.push(line as i64);
        self.typ.push(typ);
        self.kind.push(r.kind);
        opt(&mut self.ts, &r.ts);
        self.turn.push(Some(1));
        self.step
            .push(r.step.filter(|&s| (0..1 << 31).contains(&s)));
        opt(&mut self.event_id, &r.event_id);
        opt(&mut self.ref_id, &r.ref_id);
        opt(&mut self.tool_name, &r.tool_name);
        opt(&mut self.args_hash, &r.args_hash);
        self.is_error.push(r.is_error);
        opt(&mut self.finish, &r.finish);
        self.input_tokens.push(r.input_tokens);
        self.output_tokens.push(r.output_tokens);
        opt(&mut self.text, &r.text);
        self.payload.push(&r.payload);
    }
}

// ---------------------------------------------------------------------------------------
// Python semantics the mapping needs

/// Canonical JSON of a value (as `canonical_json`).
fn canon(v: &V<'_>) -> Vec<u8> {
    canon_sized(v, 64)
}

/// [`canon`] into a buffer of `size` bytes to start with.
fn canon_sized(v: &V<'_>, size: usize) -> Vec<u8> {
    let mut o = Vec::with_capacity(size);
    write(v, &mut o);
    o
}

/// A present, non-null member (`d.get(k)` that is not None).
#[inline]
fn some<'v, 'a>(v: Option<&'v V<'a>>) -> Option<&'v V<'a>> {
    v.filter(|x| !matches!(x, V::Null))
}

/// `v if isinstance(v, str) else canonical_json(v)` of a column value (None for null).
fn col_text(v: Option<&V<'_>>) -> Option<Vec<u8>> {
    match some(v)? {
        V::Str(s) => Some(s.to_vec()),
        other => Some(canon(other)),
    }
}

/// ASCII-only `str.upper()` (None: non-ASCII text, whose Unicode case mapping is not done).
fn upper(s: &[u8]) -> R<Vec<u8>> {
    if !s.is_ascii() {
        return Err(Bail);
    }
    Ok(s.to_ascii_uppercase())
}

/// Days since 1970-01-01 to (year, month, day) (proleptic Gregorian; H. Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `datetime.fromtimestamp(secs + micros / 1e6, tz=UTC).isoformat()`.
fn iso(secs: i64, micros: i64) -> Vec<u8> {
    let (y, mo, d) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let mut t = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        y,
        mo,
        d,
        s / 3600,
        (s / 60) % 60,
        s % 60
    );
    if micros != 0 {
        t.push_str(&format!(".{:06}", micros));
    }
    t.push_str("+00:00");
    t.into_bytes()
}

/// `_ts(v)`: `epoch_to_iso` kept only when it is text. Integers of epoch seconds and
/// milliseconds (up to 2^31 seconds, where the reference's float arithmetic is exact to the
/// microsecond) are converted here; nanoseconds, floats and larger values are refused.
fn ts_of(v: Option<&V<'_>>) -> R<Option<Vec<u8>>> {
    match v {
        None => Ok(None),
        Some(V::Str(s)) => Ok(Some(s.to_vec())),
        Some(V::Int(t)) => {
            let x = parse_i64(t).ok_or(Bail)?;
            if x < 0 {
                return Err(Bail);
            }
            if x <= 100_000_000_000 {
                Ok(Some(iso(x, 0)))
            } else if x < (1i64 << 31) * 1000 {
                Ok(Some(iso(x / 1000, (x % 1000) * 1000)))
            } else {
                Err(Bail)
            }
        }
        Some(V::Float(_)) => Err(Bail),
        Some(_) => Ok(None),
    }
}

/// `tokens(v, ...)`: None, or an integer (or whole-number float) that fits 64 bits and is not
/// negative; anything else is a quarantine in the reference: refused.
fn tokens(v: Option<&V<'_>>) -> R<Option<i64>> {
    match some(v) {
        None => Ok(None),
        Some(V::Int(t)) => match parse_i64(t) {
            Some(x) if x >= 0 => Ok(Some(x)),
            _ => Err(Bail),
        },
        // a float that is a whole number is converted (pandas writes counts as 24.0)
        Some(V::Float(x)) if x.fract() == 0.0 && *x >= 0.0 && *x < 9.2e18 => Ok(Some(*x as i64)),
        _ => Err(Bail),
    }
}

/// `_count(v)` as canonical JSON text: a non-negative integer (or a float that is a whole
/// number, converted), else None.
fn count(v: Option<&V<'_>>) -> R<Option<Vec<u8>>> {
    match some(v) {
        Some(V::Int(t)) => {
            if t.first() == Some(&b'-') {
                Ok(if t.iter().skip(1).all(|&c| c == b'0') {
                    Some(b"0".to_vec())
                } else {
                    None
                })
            } else {
                Ok(Some(t.to_vec()))
            }
        }
        Some(V::Float(x)) if x.fract() == 0.0 => {
            if *x >= 0.0 && *x < 9.2e18 {
                Ok(Some((*x as i64).to_string().into_bytes()))
            } else if *x < 0.0 {
                Ok(None)
            } else {
                Err(Bail)
            }
        }
        _ => Ok(None),
    }
}

/// `text_of(content)`.
fn text_of(content: Option<&V<'_>>) -> Option<Vec<u8>> {
    match some(content)? {
        V::Str(s) => Some(s.to_vec()),
        V::Arr(items) => {
            let mut out = Vec::new();
            for p in items {
                match p {
                    V::Str(s) => out.extend_from_slice(s),
                    V::Obj(_) => {
                        let t = match some(p.get(b"text")) {
                            Some(t) => Some(t),
                            None => match p.get(b"thinking") {
                                Some(th @ V::Str(_)) => Some(th),
                                _ => None,
                            },
                        };
                        if let Some(V::Str(s)) = t {
                            out.extend_from_slice(s);
                        }
                    }
                    _ => {}
                }
            }
            Some(out)
        }
        d @ V::Obj(_) => match d.get(b"text") {
            Some(V::Str(s)) => Some(s.to_vec()),
            _ => Some(canon(d)),
        },
        other => Some(canon(other)),
    }
}

/// `str.strip()` of text (Python's whitespace: Unicode `White_Space` and U+001C..U+001F).
fn py_strip(s: &[u8]) -> &[u8] {
    match std::str::from_utf8(s) {
        Ok(t) => t
            .trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
            .as_bytes(),
        Err(_) => s,
    }
}

/// An owned-or-borrowed value: tool arguments are a member of the line's tree or a value
/// decoded from a string member.
enum Val<'v, 'a> {
    Ref(&'v V<'a>),
    Own(V<'v>),
    Null,
}

impl Val<'_, '_> {
    fn v(&self) -> Option<&V<'_>> {
        match self {
            Val::Ref(v) => Some(v),
            Val::Own(v) => Some(v),
            Val::Null => None,
        }
    }
}

/// `decode_arguments(value)`: JSON text of an object or array decoded (text that does not
/// decode: refused, as the reference's decoder may read what this one does not).
fn decode_arguments<'v, 'a>(v: Option<&'v V<'a>>) -> R<Val<'v, 'a>> {
    let Some(v) = some(v) else {
        return Ok(Val::Null);
    };
    if let V::Str(s) = v {
        let t = py_strip(s);
        if matches!(t.first(), Some(b'{') | Some(b'['))
            && matches!(t.last(), Some(b'}') | Some(b']'))
        {
            return parse_text(t).map(Val::Own).map_err(|_| Bail);
        }
    }
    Ok(Val::Ref(v))
}

/// `(args_hash(args), canonical_json(args))` of tool arguments (None read as `{}`).
fn args_cols(args: Option<&V<'_>>) -> R<(Vec<u8>, Vec<u8>)> {
    let Some(a) = args else {
        return Ok((hash32(b"{}").to_vec(), b"{}".to_vec()));
    };
    let text = canon(a);
    let hashed = if let V::Str(s) = a {
        // args_hash decodes a string that is JSON text and hashes the value
        match parse_text(s) {
            Ok(v) => canon(&v),
            Err(_) => {
                let t = py_strip(s);
                let looks = matches!(
                    t.first(),
                    Some(
                        b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'N' | b'I'
                    )
                );
                if looks {
                    return Err(Bail); // the reference's decoder might read it: not sure
                }
                text.clone()
            }
        }
    } else {
        text.clone()
    };
    Ok((hash32(&hashed).to_vec(), text))
}

/// Canonical JSON of `{**obj, key: value}` (`value` canonical text already).
fn write_with(obj: &V<'_>, key: &[u8], value: &[u8]) -> Vec<u8> {
    let V::Obj(members) = obj else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    let mut done = false;
    let mut first = true;
    let mut put = |out: &mut Vec<u8>, k: &[u8], v: &dyn Fn(&mut Vec<u8>)| {
        if !first {
            out.push(b',');
        }
        first = false;
        crate::canon::write_str(k, out);
        out.push(b':');
        v(out);
    };
    for (k, v) in members {
        if !done && k.as_ref() >= key {
            put(&mut out, key, &|o| o.extend_from_slice(value));
            done = true;
            if k.as_ref() == key {
                continue;
            }
        }
        put(&mut out, k, &|o| write(v, o));
    }
    if !done {
        put(&mut out, key, &|o| o.extend_from_slice(value));
    }
    out.push(b'}');
    out
}

// ---------------------------------------------------------------------------------------
// Phoenix

/// `phoenix.attr(span, key)` (None also for a null value); attributes kept as JSON text
/// are refused.
fn attr<'v, 'a>(span: &'v V<'a>, key: &[u8]) -> R<Option<&'v V<'a>>> {
    let mut flat = b"attributes.".to_vec();
    flat.extend_from_slice(key);
    if let Some(v) = some(span.get(&flat)) {
        return Ok(Some(v));
    }
    let attrs = match span.get(b"attributes") {
        Some(V::Str(_)) => return Err(Bail),
        Some(a @ V::Obj(_)) => a,
        _ => return Ok(None),
    };
    if let Some(v) = attrs.get(key) {
        return Ok(some(Some(v)));
    }
    let parts: Vec<&[u8]> = key.split(|&c| c == b'.').collect();
    let mut node = attrs;
    let mut i = 0;
    while i < parts.len() && matches!(node, V::Obj(_)) {
        let mut found = false;
        for j in (i + 1..=parts.len()).rev() {
            let k = parts[i..j].join(&b'.');
            if let Some(n) = node.get(&k) {
                node = n;
                i = j;
                found = true;
                break;
            }
        }
        if !found {
            return Ok(None);
        }
    }
    Ok(if i == parts.len() {
        some(Some(node))
    } else {
        None
    })
}

/// Members of a dict rebuilt from numbered keys (`rest of the key -> value`).
type Members<'v, 'a> = Vec<(&'v [u8], &'v V<'a>)>;

/// A dict as `listed` and `_asked` see it: a value of the tree, or one rebuilt from numbered
/// flat keys (`rest of the key -> value`).
enum M<'v, 'a> {
    V(&'v V<'a>),
    Keys(Vec<(&'v [u8], &'v V<'a>)>),
}

impl<'v, 'a> M<'v, 'a> {
    fn is_dict(&self) -> bool {
        matches!(self, M::Keys(_) | M::V(V::Obj(_)))
    }

    fn get(&self, key: &[u8]) -> Option<&'v V<'a>> {
        match self {
            M::V(v) => v.get(key),
            M::Keys(k) => k.iter().rev().find(|(n, _)| *n == key).map(|(_, v)| *v),
        }
    }

    fn items(&self) -> Vec<(&'v [u8], &'v V<'a>)> {
        match self {
            M::V(V::Obj(m)) => m.iter().map(|(k, v)| (k.as_ref(), v)).collect(),
            M::V(_) => Vec::new(),
            M::Keys(k) => k.clone(),
        }
    }
}

/// `<digits>.<rest>` of a key (`^(\d+)\.(.+)$`): None when the key does not match; refused
/// when it might match Python's pattern differently (non-ASCII, a newline, leading zeros,
/// an index past 64 bits).
fn indexed(k: &[u8]) -> R<Option<(u64, &[u8])>> {
    if !k.is_ascii() || k.contains(&b'\n') {
        return Err(Bail);
    }
    let n = k.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n >= k.len() || k[n] != b'.' || n + 1 >= k.len() {
        return Ok(None);
    }
    if n > 1 && k[0] == b'0' {
        return Err(Bail);
    }
    let idx: u64 = std::str::from_utf8(&k[..n])
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(Bail)?;
    Ok(Some((idx, &k[n + 1..])))
}

/// `phoenix.listed(span, key)`.
fn listed<'v, 'a>(span: &'v V<'a>, key: &[u8]) -> R<Option<Vec<M<'v, 'a>>>> {
    if let Some(V::Arr(items)) = attr(span, key)? {
        return Ok(Some(items.iter().map(M::V).collect()));
    }
    let Some(V::Obj(attrs)) = span.get(b"attributes") else {
        return Ok(None);
    };
    let mut prefix = key.to_vec();
    prefix.push(b'.');
    let mut items: Vec<(u64, Members<'v, 'a>)> = Vec::new();
    for (k, x) in attrs {
        let Some(rest) = k.strip_prefix(prefix.as_slice()) else {
            continue;
        };
        if let Some((i, r)) = indexed(rest)? {
            match items.iter_mut().find(|(j, _)| *j == i) {
                Some((_, d)) => d.push((r, x)),
                None => items.push((i, vec![(r, x)])),
            }
        }
    }
    if items.is_empty() {
        return Ok(None);
    }
    items.sort_by_key(|(i, _)| *i);
    Ok(Some(items.into_iter().map(|(_, d)| M::Keys(d)).collect()))
}

/// `_messages_text(msgs)` of a non-empty list.
fn messages_text(msgs: &[M<'_, '_>]) -> Option<Vec<u8>> {
    let last = msgs.last()?;
    if !last.is_dict() {
        return None;
    }
    let m = match last.get(b"message") {
        Some(v @ V::Obj(_)) => M::V(v),
        Some(_) => return None,
        None => match last {
            M::V(v) => M::V(v),
            M::Keys(k) => M::Keys(k.clone()),
        },
    };
    let content = match m.get(b"message.content") {
        Some(v) => Some(v),
        None => m.get(b"content"),
    };
    text_of(content)
}

type Asked = Vec<(Option<Vec<u8>>, Vec<u8>)>;

/// `_asked(messages)`: `(tool name, call id)` of each call the output messages ask for.
fn asked(msgs: &[M<'_, '_>], out: &mut Asked) -> R<()> {
    const PRE: &[u8] = b"message.tool_calls.";
    for m in msgs {
        if !m.is_dict() {
            continue;
        }
        let m = match m.get(b"message") {
            Some(v @ V::Obj(_)) => M::V(v),
            Some(_) => continue,
            None => match m {
                M::V(v) => M::V(v),
                M::Keys(k) => M::Keys(k.clone()),
            },
        };
        let mut push = |c: &M<'_, '_>| {
            if let Some(V::Str(id)) = c.get(b"tool_call.id") {
                let fname = match c.get(b"tool_call.function.name") {
                    Some(V::Str(n)) => Some(n.to_vec()),
                    _ => None,
                };
                out.push((fname, id.to_vec()));
            }
        };
        if let Some(V::Arr(calls)) = m.get(b"message.tool_calls") {
            for c in calls {
                let c = M::V(c);
                if c.is_dict() {
                    push(&c);
                }
            }
            continue;
        }
        let mut found: Vec<(u64, Members<'_, '_>)> = Vec::new();
        for (k, v) in m.items() {
            let Some(rest) = k.strip_prefix(PRE) else {
                continue;
            };
            if let Some((j, r)) = indexed(rest)? {
                let field: &[u8] = match r {
                    b"tool_call.id" => b"tool_call.id",
                    b"tool_call.function.name" => b"tool_call.function.name",
                    _ => continue,
                };
                match found.iter_mut().find(|(i, _)| *i == j) {
                    Some((_, d)) => d.push((field, v)),
                    None => found.push((j, vec![(field, v)])),
                }
            }
        }
        found.sort_by_key(|(i, _)| *i);
        for (_, d) in found {
            push(&M::Keys(d));
        }
    }
    Ok(())
}

/// `_ctx(span, key)`: `context.<key>`, the `context` object's member, or the span's own.
fn ctx<'v, 'a>(span: &'v V<'a>, key: &[u8]) -> Option<&'v V<'a>> {
    let mut flat = b"context.".to_vec();
    flat.extend_from_slice(key);
    if let Some(v) = some(span.get(&flat)) {
        return Some(v);
    }
    if let Some(c @ V::Obj(_)) = span.get(b"context") {
        if let Some(v) = some(c.get(key)) {
            return Some(v);
        }
    }
    some(span.get(key))
}

/// `phoenix.FINISH.get(reason.lower(), reason)`.
fn finish_of(reason: &[u8]) -> R<Vec<u8>> {
    if !reason.is_ascii() {
        return Err(Bail);
    }
    let low = reason.to_ascii_lowercase();
    let m: &[u8] = match low.as_slice() {
        b"stop" | b"end_turn" | b"stop_sequence" => b"stop",
        b"tool_call" | b"tool_calls" | b"tool_use" | b"function_call" => b"tool-calls",
        b"length" | b"max_tokens" | b"model_length" => b"max-tokens",
        b"content_filter"
        | b"content_filtered"
        | b"refusal"
        | b"safety"
        | b"recitation"
        | b"guardrail_intervened" => b"content-filter",
        b"error" => b"error",
        _ => reason,
    };
    Ok(m.to_vec())
}

const FIGURES: [(&[u8], &[u8]); 3] = [
    (
        b"cache_read_tokens",
        b"llm.token_count.prompt_details.cache_read",
    ),
    (
        b"cache_write_tokens",
        b"llm.token_count.prompt_details.cache_write",
    ),
    (
        b"reasoning_tokens",
        b"llm.token_count.completion_details.reasoning",
    ),
];

/// A span line of a Phoenix file.
struct Span<'v, 'a> {
    line: usize,
    /// the line's length (the payload is about as long)
    size: usize,
    sid: &'v [u8],
    v: &'v V<'a>,
    trace: &'v [u8],
    start: Option<Vec<u8>>,
}

/// The rows of one trace (`phoenix._trace_rows`), appended to `out`.
fn phoenix_trace(
    out: &mut PlatOut,
    trace: &[u8],
    mut spans: Vec<&Span<'_, '_>>,
    source: &[u8],
) -> R<Option<Vec<u8>>> {
    spans.sort_by(|a, b| {
        let ka: &[u8] = a.start.as_deref().filter(|s| !s.is_empty()).unwrap_or(b"~");
        let kb: &[u8] = b.start.as_deref().filter(|s| !s.is_empty()).unwrap_or(b"~");
        ka.cmp(kb)
    }); // stable: file order among equal times
    let mut rows: Vec<(usize, Vec<u8>, Row)> = Vec::new();
    let mut step: i64 = 0;
    let mut pending: Asked = Vec::new();
    for s in spans {
        let span = s.v;
        let sid = s.sid.to_vec();
        let k = match some(span.get(b"span_kind")).filter(|v| truthy(Some(*v))) {
            Some(k) => Some(k),
            None => attr(span, b"openinference.span.kind")?,
        };
        let kind = match k {
            Some(V::Str(t)) if !t.is_empty() => upper(t)?,
            Some(x) if truthy(Some(x)) => return Err(Bail),
            _ => b"UNKNOWN".to_vec(),
        };
        let name = match span.get(b"name") {
            Some(V::Str(n)) => Some(n.to_vec()),
            _ => None,
        };
        let failed = match span.get(b"status_code") {
            Some(V::Str(c)) => upper(c)? == b"ERROR",
            _ => false,
        };
        let ts = ts_of(span.get(b"start_time"))?;
        let mut payload = None;
        if kind == b"LLM" {
            let mut figs = Vec::new();
            let mut any = false;
            for (n, key) in FIGURES {
                let c = count(attr(span, key)?)?;
                any |= c.is_some();
                figs.push((n, c));
            }
            if any {
                let mut f = b"{".to_vec();
                for (i, (n, c)) in figs.iter().enumerate() {
                    if i > 0 {
                        f.push(b',');
                    }
                    crate::canon::write_str(n, &mut f);
                    f.push(b':');
                    f.extend_from_slice(c.as_deref().unwrap_or(b"null"));
                }
                f.push(b'}');
                payload = Some(write_with(span, b"replaykitUsage", &f));
            }
        }
        let payload = payload.unwrap_or_else(|| canon_sized(span, s.size + 16));
        let base = Row {
            ts: ts.clone(),
            event_id: Some(sid.clone()),
            is_error: failed,
            ..Row::default()
        };
        if kind == b"LLM" {
            step += 1;
            let outm = listed(span, b"llm.output_messages")?;
            let text = if failed {
                col_text(span.get(b"status_message"))
            } else {
                match &outm {
                    Some(m) if !m.is_empty() => messages_text(m),
                    _ => return Err(Bail), // the reply readers decide: the reference
                }
            };
            if let Some(m) = &outm {
                asked(m, &mut pending)?;
            }
            let finish = if failed {
                b"error".to_vec()
            } else {
                match attr(span, b"llm.finish_reason")? {
                    Some(V::Str(r)) if !r.is_empty() => finish_of(r)?,
                    _ => b"unknown".to_vec(),
                }
            };
            let input_tokens = tokens(attr(span, b"llm.token_count.prompt")?)?;
            let output_tokens = tokens(attr(span, b"llm.token_count.completion")?)?;
            rows.push((
                s.line,
                kind,
                Row {
                    kind: b"model_response",
                    ref_id: Some(sid.clone()),
                    step: Some(step),
                    finish: Some(finish),
                    input_tokens,
                    output_tokens,
                    text,
                    payload,
                    ..base
                },
            ));
        } else if kind == b"TOOL" {
            let tname = match attr(span, b"tool.name")? {
                Some(V::Str(t)) if !t.is_empty() => Some(t.to_vec()),
                Some(x) if truthy(Some(x)) => return Err(Bail),
                _ => name.clone(),
            };
            let iv = attr(span, b"input.value")?;
            let src = if truthy(iv) {
                iv
            } else {
                attr(span, b"tool.parameters")?
            };
            let args = decode_arguments(src)?;
            let (ahash, atext) = args_cols(args.v())?;
            let cid = match attr(span, b"tool_call.id")? {
                Some(V::Str(c)) if !c.is_empty() => c.to_vec(),
                _ => match pending.iter().position(|(n, _)| *n == tname) {
                    Some(i) => pending.remove(i).1,
                    None => sid.clone(),
                },
            };
            let output = attr(span, b"output.value")?;
            let mut result = b"{\"end_time\":".to_vec();
            match some(span.get(b"end_time")) {
                Some(v) => write(v, &mut result),
                None => result.extend_from_slice(b"null"),
            }
            result.extend_from_slice(b",\"output\":");
            match output {
                Some(v) => write(v, &mut result),
                None => result.extend_from_slice(b"null"),
            }
            result.extend_from_slice(b",\"part\":\"result\",\"span_id\":");
            crate::canon::write_str(&sid, &mut result);
            for (k, key) in [
                (&b",\"status_code\":"[..], &b"status_code"[..]),
                (b",\"status_message\":", b"status_message"),
            ] {
                result.extend_from_slice(k);
                match some(span.get(key)) {
                    Some(v) => write(v, &mut result),
                    None => result.extend_from_slice(b"null"),
                }
            }
            result.push(b'}');
            let ended = ts_of(span.get(b"end_time"))?;
            let text = if failed {
                col_text(span.get(b"status_message"))
            } else {
                match output {
                    Some(V::Str(o)) => Some(o.to_vec()),
                    o => text_of(o),
                }
            };
            let st = if step > 0 { Some(step) } else { None };
            rows.push((
                s.line,
                kind.clone(),
                Row {
                    kind: b"tool_call",
                    ref_id: Some(cid.clone()),
                    tool_name: tname.clone(),
                    step: st,
                    is_error: false,
                    args_hash: Some(ahash),
                    text: Some(atext),
                    payload,
                    ts: base.ts.clone(),
                    event_id: base.event_id.clone(),
                    ..Row::default()
                },
            ));
            rows.push((
                s.line,
                kind,
                Row {
                    kind: b"tool_result",
                    ref_id: Some(cid),
                    tool_name: tname,
                    step: st,
                    event_id: None,
                    ts: match ended {
                        Some(e) if !e.is_empty() => Some(e),
                        _ => base.ts.clone(),
                    },
                    text,
                    payload: result,
                    is_error: failed,
                    ..Row::default()
                },
            ));
        } else {
            let root = !truthy(span.get(b"parent_id"));
            rows.push((
                s.line,
                kind,
                Row {
                    kind: if root { b"session" } else { b"other" },
                    step: if root || step == 0 { None } else { Some(step) },
                    text: name,
                    payload,
                    ..base
                },
            ));
        }
    }
    let created = rows.first().and_then(|r| r.2.ts.clone());
    for (seq, (line, typ, r)) in rows.iter().enumerate() {
        out.push(trace, source, *line, typ, seq as i64, r);
    }
    Ok(created)
}

/// What a file the scanner refuses says about its traces: the trace ids of the lines it
/// could read, and the lines it could not (searched for other files' trace ids).
#[derive(Default)]
struct Traces {
    ids: HashSet<Vec<u8>>,
    unread: Vec<Vec<u8>>,
    /// a trace id that could not be told (the caller then reads every file by the reference)
    unsure: bool,
}

/// The trace id of a record as text (`str(_ctx(span, "trace_id"))`); None when absent;
/// Err when it is not text or an integer.
fn trace_text(span: &V<'_>) -> R<Option<Vec<u8>>> {
    match ctx(span, b"trace_id") {
        None => Ok(None),
        Some(V::Str(s)) => Ok(Some(s.to_vec())),
        Some(V::Int(t)) if parse_i64(t).is_some() && *t != b"-0" => Ok(Some(t.to_vec())),
        Some(_) => Err(Bail),
    }
}

fn traces_of(file: &[u8]) -> Traces {
    let mut t = Traces::default();
    for (_, raw) in lines(file) {
        if std::str::from_utf8(raw).is_err() {
            continue; // bad_encoding in the reference: no record
        }
        let Ok(v) = parse_text(raw) else {
            t.unread.push(raw.to_vec());
            continue;
        };
        let mut recs: Vec<&V<'_>> = vec![&v];
        for key in [&b"data"[..], b"spans", b"observations", b"runs"] {
            if let Some(V::Arr(items)) = v.get(key) {
                recs.extend(items.iter());
            }
        }
        for r in recs {
            match trace_text(r) {
                Ok(Some(id)) => {
                    t.ids.insert(id);
                }
                Ok(None) => {}
                Err(_) => t.unsure = true,
            }
        }
    }
    t
}

/// One Phoenix file mapped (Err: the reference reads it); its trace ids.
fn phoenix_file(file: &[u8], path: &[u8], source: &[u8]) -> R<(PlatOut, Vec<Vec<u8>>)> {
    let docs = objects(file).ok_or(Bail)?;
    let sizes: Vec<usize> = lines(file).map(|(_, raw)| raw.len()).collect();
    let mut spans: Vec<Span<'_, '_>> = Vec::with_capacity(docs.len());
    for ((line, d), &size) in docs.iter().zip(&sizes) {
        // a line holding a whole document, or not looking like a record: the reference
        // unwraps it
        for key in [&b"observations"[..], b"spans", b"runs"] {
            if matches!(d.get(key), Some(V::Arr(_))) {
                return Err(Bail);
            }
        }
        if [&b"id"[..], b"span_id", b"context.span_id", b"context"]
            .iter()
            .all(|k| d.get(k).is_none())
        {
            return Err(Bail);
        }
        let trace = match ctx(d, b"trace_id") {
            Some(V::Str(s)) if !s.is_empty() => &s[..],
            _ => return Err(Bail),
        };
        let sid = match ctx(d, b"span_id") {
            Some(V::Str(s)) if !s.is_empty() => &s[..],
            _ => return Err(Bail),
        };
        spans.push(Span {
            line: *line,
            size,
            sid,
            v: d,
            trace,
            start: ts_of(d.get(b"start_time"))?,
        });
    }
    // spans of each trace, traces in the order first seen; one copy of each span
    let mut order: Vec<&[u8]> = Vec::new();
    let mut groups: HashMap<&[u8], Vec<&Span<'_, '_>>> = HashMap::new();
    let mut seen: HashSet<(&[u8], &[u8])> = HashSet::new();
    for s in &spans {
        if !seen.insert((s.trace, s.sid)) {
            return Err(Bail); // the reference dedupes (warning) or quarantines
        }
        groups
            .entry(s.trace)
            .or_insert_with(|| {
                order.push(s.trace);
                Vec::new()
            })
            .push(s);
    }
    let mut out = PlatOut::new(spans.len() + spans.len() / 4, file.len());
    for tid in &order {
        let group = groups.remove(tid).unwrap_or_default();
        // the run's attrs: the file, then what its root spans say (first one wins)
        let mut name: Option<Vec<u8>> = None;
        let mut session: Option<Vec<u8>> = None;
        for s in &group {
            if !truthy(s.v.get(b"parent_id")) {
                if name.is_none() {
                    name = Some(match s.v.get(b"name") {
                        Some(v) => canon(v),
                        None => b"null".to_vec(),
                    });
                }
                if session.is_none() {
                    if let Some(v) = attr(s.v, b"session.id")? {
                        session = Some(canon(v));
                    }
                }
            }
        }
        let mut attrs = b"{\"file\":".to_vec();
        crate::canon::write_str(path, &mut attrs);
        attrs.extend_from_slice(b",\"format\":\"phoenix\"");
        if let Some(n) = name {
            attrs.extend_from_slice(b",\"name\":");
            attrs.extend_from_slice(&n);
        }
        if let Some(s) = session {
            attrs.extend_from_slice(b",\"session_id\":");
            attrs.extend_from_slice(&s);
        }
        attrs.push(b'}');
        let before = out.len();
        let created = phoenix_trace(&mut out, tid, group, source)?;
        if out.len() > before {
            out.runs.push((tid.to_vec(), created, attrs));
        }
    }
    let ids = order.iter().map(|t| t.to_vec()).collect();
    Ok((out, ids))
}

/// Many Phoenix JSONL files: the rows of those decided natively, in file order.
pub struct PlatFiles {
    pub out: PlatOut,
    /// per file: read natively
    pub ok: Vec<bool>,
    /// per file: its first row and its first run (n + 1 entries each)
    pub row_start: Vec<i64>,
    pub run_start: Vec<i64>,
}

enum Got {
    Ok(Box<PlatOut>, Vec<Vec<u8>>),
    No(Traces),
}

/// Scan the Phoenix JSONL files at `paths` (`names`: each path as the reference writes it
/// into the run attrs; `sources`: the `source` column of each) on up to `threads` threads.
/// A file is decided natively when the scanner accepts it and no other file holds one of its
/// traces.
pub fn scan_phoenix_files(
    paths: &[std::path::PathBuf],
    names: &[Vec<u8>],
    sources: &[Vec<u8>],
    threads: usize,
) -> PlatFiles {
    let n = paths.len();
    let one = |i: usize| -> Got {
        let Ok(data) = std::fs::read(&paths[i]) else {
            return Got::No(Traces::default()); // unreadable: no records in the reference
        };
        match phoenix_file(&data, &names[i], &sources[i]) {
            Ok((o, ids)) => Got::Ok(Box::new(o), ids),
            Err(_) => Got::No(traces_of(&data)),
        }
    };
    let ranges: Vec<(usize, usize)> = (0..n).map(|i| (i, i + 1)).collect();
    let parts: Vec<Got> = crate::par::map_ranges(&ranges, threads.max(1), |a, _| one(a));
    // which files hold each trace
    let mut holders: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut unsure = false;
    let mut unread_bytes = 0usize;
    for p in &parts {
        let ids: Box<dyn Iterator<Item = &Vec<u8>>> = match p {
            Got::Ok(_, ids) => Box::new(ids.iter()),
            Got::No(t) => {
                unsure |= t.unsure;
                unread_bytes += t.unread.iter().map(Vec::len).sum::<usize>();
                Box::new(t.ids.iter())
            }
        };
        for id in ids {
            *holders.entry(id.clone()).or_insert(0) += 1;
        }
    }
    let unread: Vec<&Vec<u8>> = parts
        .iter()
        .flat_map(|p| match p {
            Got::No(t) => t.unread.iter().collect::<Vec<_>>(),
            Got::Ok(..) => Vec::new(),
        })
        .collect();
    if unread
        .iter()
        .any(|l| memchr::memmem::find(l, b"\\u").is_some())
        || unread_bytes > 1 << 20
    {
        unsure = true;
    }
    let take: Vec<bool> = parts
        .iter()
        .map(|p| match p {
            Got::Ok(_, ids) if !unsure => ids.iter().all(|id| {
                holders.get(id) == Some(&1)
                    && !unread.iter().any(|l| memchr::memmem::find(l, id).is_some())
            }),
            _ => false,
        })
        .collect();
    drop(unread);
    let mut out = PlatOut::new(0, 0);
    let mut row_start = vec![0i64];
    let mut run_start = vec![0i64];
    for (p, &t) in parts.into_iter().zip(&take) {
        if let (true, Got::Ok(o, _)) = (t, p) {
            if out.is_empty() && out.runs.is_empty() {
                out = *o;
            } else {
                out.append(*o);
            }
        }
        row_start.push(out.len() as i64);
        run_start.push(out.runs.len() as i64);
    }
    let ok = take;
    if out.overflows() {
        return PlatFiles {
            out: PlatOut::new(0, 0),
            ok: vec![false; n],
            row_start: vec![0; n + 1],
            run_start: vec![0; n + 1],
        };
    }
    PlatFiles {
        out,
        ok,
        row_start,
        run_start,
    }
}

/// One file's bytes mapped as a Phoenix export (for the fuzz target and tests): the rows, or
/// None when the reference must read it.
pub fn scan_phoenix(file: &[u8]) -> Option<PlatOut> {
    phoenix_file(file, b"f.jsonl", b"phoenix:f.jsonl")
        .ok()
        .map(|(o, _)| o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_as_python_writes_them() {
        assert_eq!(iso(0, 0), b"1970-01-01T00:00:00+00:00");
        assert_eq!(
            ts_of(Some(&V::Int(b"1796218206395"))).unwrap().unwrap(),
            b"2026-12-02T13:30:06.395000+00:00"
        );
        assert_eq!(
            ts_of(Some(&V::Int(b"951782400"))).unwrap().unwrap(),
            b"2000-02-29T00:00:00+00:00"
        );
        assert!(ts_of(Some(&V::Int(b"1796218206395000000"))).is_err());
        assert!(ts_of(Some(&V::Float(1.5))).is_err());
        assert_eq!(ts_of(Some(&V::Null)).unwrap(), None);
    }

    #[test]
    fn attributes_in_every_shape() {
        let flat =
            parse_text(br#"{"attributes.llm.model_name":"m","attributes":{"x":1}}"#).unwrap();
        assert!(
            matches!(attr(&flat, b"llm.model_name").unwrap(), Some(V::Str(s)) if &s[..] == b"m")
        );
        let dotted = parse_text(br#"{"attributes":{"llm.model_name":"m"}}"#).unwrap();
        assert!(matches!(
            attr(&dotted, b"llm.model_name").unwrap(),
            Some(V::Str(_))
        ));
        let nested = parse_text(br#"{"attributes":{"llm":{"token_count":{"prompt":3}}}}"#).unwrap();
        assert!(matches!(
            attr(&nested, b"llm.token_count.prompt").unwrap(),
            Some(V::Int(b"3"))
        ));
        assert!(attr(&nested, b"llm.token_count").unwrap().is_some());
        assert!(attr(&nested, b"llm.token_count.prompt.x")
            .unwrap()
            .is_none());
        let text = parse_text(br#"{"attributes":"{}"}"#).unwrap();
        assert!(attr(&text, b"a").is_err());
    }

    #[test]
    fn numbered_keys_become_messages() {
        let s = parse_text(
            br#"{"attributes":{"llm.output_messages.1.message.content":"b","llm.output_messages.0.message.content":"a","llm.output_messages.0.message.tool_calls.0.tool_call.id":"c1","llm.output_messages.0.message.tool_calls.0.tool_call.function.name":"f"}}"#,
        )
        .unwrap();
        let m = listed(&s, b"llm.output_messages").unwrap().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(messages_text(&m).unwrap(), b"b");
        let mut a = Vec::new();
        asked(&m, &mut a).unwrap();
        assert_eq!(a, vec![(Some(b"f".to_vec()), b"c1".to_vec())]);
        let z = parse_text(br#"{"attributes":{"llm.output_messages.01.message.content":"b"}}"#)
            .unwrap();
        assert!(listed(&z, b"llm.output_messages").is_err());
    }

    #[test]
    fn a_small_file_and_refusals() {
        let f = br#"{"context":{"trace_id":"t","span_id":"a"},"span_kind":"CHAIN","name":"root","start_time":"2026-01-01T00:00:00+00:00","parent_id":null}
{"context":{"trace_id":"t","span_id":"b"},"span_kind":"LLM","parent_id":"a","start_time":"2026-01-01T00:00:01+00:00","attributes":{"llm.output_messages.0.message.content":"hi","llm.token_count.prompt":3}}
"#;
        let o = scan_phoenix(f).unwrap();
        assert_eq!(o.len(), 2);
        assert_eq!(o.runs.len(), 1);
        assert_eq!(
            o.runs[0].2,
            br#"{"file":"f.jsonl","format":"phoenix","name":"root"}"#
        );
        assert_eq!(o.input_tokens.get(1), Some(3));
        // an LLM span without output messages needs the reference's reply readers
        let g = br#"{"context":{"trace_id":"t","span_id":"b"},"span_kind":"LLM"}"#;
        assert!(scan_phoenix(g).is_none());
        // the same span twice
        let h = b"{\"context\":{\"trace_id\":\"t\",\"span_id\":\"a\"}}\n{\"context\":{\"trace_id\":\"t\",\"span_id\":\"a\"}}\n";
        assert!(scan_phoenix(h).is_none());
        assert!(scan_phoenix(b"{\"context\":{}}\nnot json\n").is_none());
    }

    #[test]
    fn arguments_hash_like_the_reference() {
        // args_hash('{"b": 1, "a": 2}') hashes the decoded value
        let (h1, t1) = args_cols(Some(&parse_text(br#"{"a":2,"b":1}"#).unwrap())).unwrap();
        assert_eq!(t1, br#"{"a":2,"b":1}"#);
        // (a decoded string: Owned; Borrowed is text that held no escape in its line)
        let s = V::Str(std::borrow::Cow::Owned(br#"{"b": 1, "a": 2}"#.to_vec()));
        let (h2, t2) = args_cols(Some(&s)).unwrap();
        assert_eq!(h1, h2);
        assert_eq!(t2, br#""{\"b\": 1, \"a\": 2}""#);
        let (h3, _) = args_cols(None).unwrap();
        assert_eq!(&h3[..], &hash32(b"{}")[..]);
    }
}
