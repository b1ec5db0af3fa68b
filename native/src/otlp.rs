//! OTLP/JSON documents (`ExportTraceServiceRequest` / `ExportLogsServiceRequest`): the
//! envelope decoded natively, on the strict scanner of [`crate::json`].
//!
//! The reference (`replaykit/io/otel/_decode.py`) decodes a document with `json.loads` and
//! then walks it in Python: every `{key, value}` attribute and every `AnyValue` becomes a
//! Python object twice. Here one pass validates the document (UTF-8, strict JSON, depth) and a
//! second walks the OTLP structure, writing each span and log record in the *reference's
//! record shape* (hex ids lower-cased, times as integers, attributes as one JSON object, span
//! kinds by name, status codes as integers, the resource and scope name) as compact JSON
//! text: `[[span, ...], [log record, ...]]`. The Python side decodes that text once (orjson)
//! and hands the records to the same mapping as the reference's.
//!
//! The walk bails (returns None) on every shape it does not decide itself: snake_case field
//! names, base64 ids, times or ints given as floats or odd text, integers beyond 18 digits
//! anywhere it copies values verbatim, a bad resource, a span without ids, and everything the
//! reference reports as `bad_json` / `bad_document` / `bad_span` / `bad_log_record`. A
//! document it declines is read by the reference, which finds and reports what is wrong.

use crate::json::{decoded, parse_i64, Kind, Scanner, Str, MAX_DEPTH, R};

/// One document of a file: its 1-based line, its byte range (the whole line without its
/// `\n` / `\r\n`; a UTF-8 byte order mark on line 1 is kept in the range and skipped by the
/// decoder) and its records as JSON text, or None when the reference must read it.
#[derive(Debug)]
pub struct Doc {
    pub line: i64,
    pub start: usize,
    pub end: usize,
    pub text: Option<Vec<u8>>,
}

/// Every document of a file: with `lines` (`.jsonl` / `.ndjson`) one per non-blank line
/// (blank: only ASCII whitespace, as Python's `bytes.strip` sees it), else the whole file.
pub fn scan(data: &[u8], lines: bool) -> Vec<Doc> {
    let mut out = Vec::new();
    if !lines {
        out.push(Doc {
            line: 1,
            start: 0,
            end: data.len(),
            text: decode_doc(strip_bom(data, 1)),
        });
        return out;
    }
    let mut pos = 0;
    let mut line = 0i64;
    while pos < data.len() {
        line += 1;
        let nl = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |k| pos + k);
        let mut end = nl;
        if end > pos && data[end - 1] == b'\r' {
            end -= 1;
        }
        let raw = &data[pos..end];
        if !raw
            .iter()
            .all(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        {
            out.push(Doc {
                line,
                start: pos,
                end,
                text: decode_doc(strip_bom(raw, line)),
            });
        }
        pos = nl + 1;
    }
    out
}

fn strip_bom(raw: &[u8], line: i64) -> &[u8] {
    if line == 1 && raw.starts_with(b"\xef\xbb\xbf") {
        &raw[3..]
    } else {
        raw
    }
}

/// One document's records as `[[span, ...], [log record, ...]]` JSON text, or None.
pub fn decode_doc(s: &[u8]) -> Option<Vec<u8>> {
    std::str::from_utf8(s).ok()?;
    let mut sc = Scanner::new(s);
    sc.skip_ws();
    let v0 = sc.pos;
    let mut tape = Vec::with_capacity(s.len() / 16);
    build(&mut sc, &mut tape, 0, None).ok()?;
    sc.skip_ws();
    if sc.pos != s.len() || !matches!(tape[0].kind, Kind::Object { .. }) {
        return None;
    }
    let mut w = Walk {
        s,
        tape,
        out: Vec::with_capacity(s.len() + 64),
    };
    w.document(v0).ok()?;
    Some(w.out)
}

/// One value of the document (in document order): its extent, kind, key (a member's) and
/// the index of the node after its subtree.
struct Node {
    v0: usize,
    v1: usize,
    kind: Kind,
    key: Option<Str>,
    next: usize,
}

/// Validate one value (strictly, as `json::Scanner::value`, with the same depth limit) and
/// append its nodes to the tape: one pass, so the walk never scans a value twice.
fn build(sc: &mut Scanner, tape: &mut Vec<Node>, level: usize, key: Option<Str>) -> R<()> {
    let idx = tape.len();
    let v0 = sc.pos;
    tape.push(Node {
        v0,
        v1: v0,
        kind: Kind::Null,
        key,
        next: 0,
    });
    let open = sc.peek().ok_or(crate::json::Bail)?;
    let kind = if open == b'{' || open == b'[' {
        if level + 1 > MAX_DEPTH {
            return bail();
        }
        let close = if open == b'{' { b'}' } else { b']' };
        sc.pos += 1;
        sc.skip_ws();
        if sc.peek() == Some(close) {
            sc.pos += 1;
        } else {
            loop {
                sc.skip_ws();
                let k = if open == b'{' {
                    let k = sc.string()?;
                    sc.skip_ws();
                    sc.expect(b':')?;
                    sc.skip_ws();
                    Some(k)
                } else {
                    None
                };
                build(sc, tape, level + 1, k)?;
                sc.skip_ws();
                match sc.peek() {
                    Some(b',') => sc.pos += 1,
                    Some(c) if c == close => {
                        sc.pos += 1;
                        break;
                    }
                    _ => return bail(),
                }
            }
        }
        if open == b'{' {
            Kind::Object {
                start: v0,
                end: sc.pos,
            }
        } else {
            Kind::Array
        }
    } else {
        sc.value(level)?
    };
    let next = tape.len();
    let n = &mut tape[idx];
    n.v1 = sc.pos;
    n.kind = kind;
    n.next = next;
    Ok(())
}

/// A member of an object: its key and its value's extent and kind.
struct M {
    key: Str,
    v0: usize,
    v1: usize,
    kind: Kind,
}

/// A value's extent and kind.
#[derive(Clone, Copy)]
struct V {
    v0: usize,
    v1: usize,
    kind: Kind,
}

/// What a decoded attribute value is (for the reference's type checks).
#[derive(Clone, Copy, PartialEq, Eq)]
enum T {
    Null,
    Str,
    Scalar,
    Container,
}

const BAIL: R<()> = Err(crate::json::Bail);

fn bail<X>() -> R<X> {
    Err(crate::json::Bail)
}

/// Field names the reference also reads in protobuf's snake_case spelling (then the
/// camelCase one wins or not by presence): such documents go to the reference.
const SNAKE: &[&[u8]] = &[
    b"resource_spans",
    b"resource_logs",
    b"scope_spans",
    b"scope_logs",
    b"log_records",
    b"trace_id",
    b"span_id",
    b"parent_span_id",
    b"start_time_unix_nano",
    b"end_time_unix_nano",
    b"time_unix_nano",
    b"observed_time_unix_nano",
    b"event_name",
    b"severity_text",
    b"string_value",
    b"int_value",
    b"double_value",
    b"bool_value",
    b"array_value",
    b"kvlist_value",
    b"bytes_value",
];

struct Walk<'a> {
    s: &'a [u8],
    tape: Vec<Node>,
    out: Vec<u8>,
}

impl<'a> Walk<'a> {
    /// The node whose value starts at byte `at` (the tape is in document order).
    fn node(&self, at: usize) -> R<usize> {
        self.tape
            .binary_search_by_key(&at, |n| n.v0)
            .map_err(|_| crate::json::Bail)
    }

    fn members(&self, at: usize) -> R<Vec<M>> {
        let idx = self.node(at)?;
        if !matches!(self.tape[idx].kind, Kind::Object { .. }) {
            return bail();
        }
        let mut ms = Vec::new();
        let mut c = idx + 1;
        while c < self.tape[idx].next {
            let n = &self.tape[c];
            let key = n.key.ok_or(crate::json::Bail)?;
            if SNAKE.contains(&self.key(key).as_ref()) {
                return bail();
            }
            ms.push(M {
                key,
                v0: n.v0,
                v1: n.v1,
                kind: n.kind,
            });
            c = n.next;
        }
        Ok(ms)
    }

    fn elements(&self, at: usize) -> R<Vec<V>> {
        let idx = self.node(at)?;
        if self.tape[idx].kind != Kind::Array {
            return bail();
        }
        let mut vs = Vec::new();
        let mut c = idx + 1;
        while c < self.tape[idx].next {
            let n = &self.tape[c];
            vs.push(V {
                v0: n.v0,
                v1: n.v1,
                kind: n.kind,
            });
            c = n.next;
        }
        Ok(vs)
    }

    fn key(&self, k: Str) -> std::borrow::Cow<'a, [u8]> {
        decoded(self.s, k)
    }

    /// The value of the last member named `name` (a dict keeps the last of duplicates).
    fn get(&self, ms: &[M], name: &[u8]) -> Option<V> {
        ms.iter()
            .rev()
            .find(|m| self.key(m.key).as_ref() == name)
            .map(|m| V {
                v0: m.v0,
                v1: m.v1,
                kind: m.kind,
            })
    }

    fn raw(&self, v: V) -> &'a [u8] {
        &self.s[v.v0..v.v1]
    }

    /// Copy a value as written; integers of more than 18 digits bail (the reference keeps
    /// every digit, the decoder on the Python side may not).
    fn verbatim(&mut self, v: V) -> R<()> {
        let raw = self.raw(v);
        match v.kind {
            Kind::Number(n) if n.integer => {
                let digits = raw.iter().filter(|c| c.is_ascii_digit()).count();
                if digits > 18 {
                    return BAIL;
                }
            }
            Kind::Array | Kind::Object { .. } => long_int_free(raw)?,
            _ => {}
        }
        self.out.extend_from_slice(raw);
        Ok(())
    }

    fn push(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    fn push_int(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        self.out.extend_from_slice(b.format(n).as_bytes());
    }

    fn document(&mut self, at: usize) -> R<()> {
        let ms = self.members(at)?;
        let rs = self.get(&ms, b"resourceSpans");
        let rl = self.get(&ms, b"resourceLogs");
        let mut has_any = false;
        let mut n = 0usize;
        self.push(b"[[");
        match rs.map(|v| v.kind) {
            None | Some(Kind::Null) => {
                if rl.is_none() {
                    return BAIL; // the reference: 'has no "resourceSpans" array'
                }
            }
            Some(Kind::Array) => {
                has_any = true;
                for r in self.elements(rs.unwrap().v0)? {
                    n += self.resource_spans(r, n)?;
                }
            }
            _ => return BAIL,
        }
        self.push(b"],[");
        let mut k = 0usize;
        match rl.map(|v| v.kind) {
            None | Some(Kind::Null) => {}
            Some(Kind::Array) => {
                has_any = true;
                for r in self.elements(rl.unwrap().v0)? {
                    k += self.resource_logs(r, k)?;
                }
            }
            _ => return BAIL,
        }
        if n == 0 && k == 0 && !has_any {
            return BAIL;
        }
        self.push(b"]]");
        Ok(())
    }

    /// The resource's attributes as JSON object text (a bad resource bails).
    fn resource(&mut self, ms: &[M]) -> R<Vec<u8>> {
        let saved = std::mem::take(&mut self.out);
        let got = match self.get(ms, b"resource") {
            None => Ok(()),
            Some(v) if v.kind == Kind::Null => Ok(()),
            Some(v) if matches!(v.kind, Kind::Object { .. }) => {
                let rm = self.members(v.v0)?;
                match self.get(&rm, b"attributes") {
                    None => Ok(()),
                    Some(a) => self.attributes(a, &mut None).map(|_| ()),
                }
            }
            Some(_) => BAIL,
        };
        let text = std::mem::replace(&mut self.out, saved);
        got?;
        Ok(if text.is_empty() {
            b"{}".to_vec()
        } else {
            text
        })
    }

    /// The scope's name (any JSON value, as the reference keeps it) as JSON text.
    fn scope_name(&mut self, ms: &[M]) -> R<Vec<u8>> {
        let saved = std::mem::take(&mut self.out);
        let got = match self.get(ms, b"scope") {
            None => Ok(()),
            Some(v) if v.kind == Kind::Null => Ok(()),
            Some(v) if matches!(v.kind, Kind::Object { .. }) => {
                let sm = self.members(v.v0)?;
                match self.get(&sm, b"name") {
                    None => Ok(()),
                    Some(nv) => self.verbatim(nv),
                }
            }
            Some(_) => BAIL,
        };
        let text = std::mem::replace(&mut self.out, saved);
        got?;
        Ok(if text.is_empty() {
            b"null".to_vec()
        } else {
            text
        })
    }

    /// An array that may be null (then empty), else bail.
    fn list(&self, v: Option<V>) -> R<Vec<V>> {
        match v {
            None => Ok(Vec::new()),
            Some(v) if v.kind == Kind::Null => Ok(Vec::new()),
            Some(v) if v.kind == Kind::Array => self.elements(v.v0),
            Some(_) => bail(),
        }
    }

    fn object(&self, v: V) -> R<Vec<M>> {
        match v.kind {
            Kind::Object { .. } => self.members(v.v0),
            _ => bail(),
        }
    }

    fn resource_spans(&mut self, r: V, before: usize) -> R<usize> {
        let ms = self.object(r)?;
        let resource = self.resource(&ms)?;
        let mut n = 0;
        for ss in self.list(self.get(&ms, b"scopeSpans"))? {
            let sm = self.object(ss)?;
            let scope = self.scope_name(&sm)?;
            for span in self.list(self.get(&sm, b"spans"))? {
                if before + n > 0 {
                    self.push(b",");
                }
                self.span(span, &resource, &scope)?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn resource_logs(&mut self, r: V, before: usize) -> R<usize> {
        let ms = self.object(r)?;
        self.resource(&ms)?; // validated only: a bad one fails the records (reference)
        let mut n = 0;
        for sl in self.list(self.get(&ms, b"scopeLogs"))? {
            let sm = self.object(sl)?;
            let scope = self.scope_name(&sm)?;
            for item in self.list(self.get(&sm, b"logRecords"))? {
                if before + n > 0 {
                    self.push(b",");
                }
                self.log_record(item, &scope)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// A hex id lower-cased (`null` when absent, null or empty); other spellings bail.
    fn hex_id(&mut self, v: Option<V>, size: usize) -> R<bool> {
        let Some(v) = v else {
            self.push(b"null");
            return Ok(false);
        };
        match v.kind {
            Kind::Null => {
                self.push(b"null");
                Ok(false)
            }
            Kind::String(st) if !st.escaped => {
                let raw = &self.s[st.start..st.end];
                if raw.is_empty() {
                    self.push(b"null");
                    return Ok(false);
                }
                self.out.push(b'"');
                if raw.len() == 2 * size && raw.iter().all(|c| c.is_ascii_hexdigit()) {
                    self.out.extend(raw.iter().map(|c| c.to_ascii_lowercase()));
                } else {
                    // protobuf's JSON mapping writes ids as base64 (padded, canonical length)
                    let bytes = base64_id(raw, size)?;
                    for b in bytes {
                        self.out.push(HEX[(b >> 4) as usize]);
                        self.out.push(HEX[(b & 15) as usize]);
                    }
                }
                self.out.push(b'"');
                Ok(true)
            }
            _ => bail(),
        }
    }

    /// Unix nanoseconds (0 when absent, null or ""): a non-negative integer or its digits.
    fn nanos(&self, v: Option<V>) -> R<i64> {
        let Some(v) = v else { return Ok(0) };
        let n = match v.kind {
            Kind::Null => return Ok(0),
            Kind::Number(n) if n.integer => parse_i64(&self.s[n.start..n.end]),
            Kind::String(st) if !st.escaped => {
                let raw = &self.s[st.start..st.end];
                if raw.is_empty() {
                    return Ok(0);
                }
                if !raw.iter().all(|c| c.is_ascii_digit()) {
                    return bail();
                }
                parse_i64(raw)
            }
            _ => None,
        };
        match n {
            Some(n) if n >= 0 => Ok(n),
            _ => bail(),
        }
    }

    /// OTLP `[{key, value}, ...]` as one JSON object (null: `{}`). `track`: the output range
    /// and type of the last `event.name` attribute (log records read their name from it).
    fn attributes(&mut self, v: V, track: &mut Option<(usize, usize, T)>) -> R<()> {
        let items = match v.kind {
            Kind::Null => {
                self.push(b"{}");
                return Ok(());
            }
            Kind::Array => self.elements(v.v0)?,
            _ => return BAIL,
        };
        self.out.push(b'{');
        for (i, it) in items.into_iter().enumerate() {
            let ms = self.object(it)?;
            let Some(k) = self.get(&ms, b"key") else {
                return BAIL;
            };
            let Kind::String(kst) = k.kind else {
                return BAIL;
            };
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(self.raw(k));
            self.out.push(b':');
            let at = self.out.len();
            let t = match self.get(&ms, b"value") {
                None => {
                    self.push(b"null");
                    T::Null
                }
                Some(val) => self.any_value(val)?,
            };
            let name = self.key(kst);
            let name = name.as_ref();
            if name == b"gen_ai.operation.name" && !matches!(t, T::Null | T::Str) {
                return BAIL; // the reference: must be a string
            }
            if name == b"gen_ai.conversation.id" && t == T::Container {
                return BAIL; // the reference: must be a string (or a scalar)
            }
            if name == b"event.name" {
                *track = Some((at, self.out.len(), t));
            }
        }
        self.out.push(b'}');
        Ok(())
    }

    fn kind_of(k: Kind) -> T {
        match k {
            Kind::Null => T::Null,
            Kind::String(_) => T::Str,
            Kind::Array | Kind::Object { .. } => T::Container,
            _ => T::Scalar,
        }
    }

    /// An OTLP `AnyValue` as its plain JSON value (a non-object is kept as written).
    fn any_value(&mut self, v: V) -> R<T> {
        if !matches!(v.kind, Kind::Object { .. }) {
            self.verbatim(v)?;
            return Ok(Self::kind_of(v.kind));
        }
        let ms = self.members(v.v0)?;
        if let Some(x) = self.get(&ms, b"stringValue") {
            self.verbatim(x)?;
            return Ok(Self::kind_of(x.kind));
        }
        if let Some(x) = self.get(&ms, b"intValue") {
            let n = match x.kind {
                Kind::Number(n) if n.integer => parse_i64(&self.s[n.start..n.end]),
                Kind::String(st) if !st.escaped => {
                    let raw = &self.s[st.start..st.end];
                    let digits = raw.strip_prefix(b"-").unwrap_or(raw);
                    if digits.is_empty() || !digits.iter().all(|c| c.is_ascii_digit()) {
                        return bail();
                    }
                    parse_i64(raw)
                }
                _ => None,
            };
            let Some(n) = n else { return bail() };
            self.push_int(n);
            return Ok(T::Scalar);
        }
        if let Some(x) = self.get(&ms, b"doubleValue") {
            match x.kind {
                Kind::Null => self.push(b"0.0"),
                Kind::Number(n) if n.integer => {
                    let Some(i) = parse_i64(&self.s[n.start..n.end]) else {
                        return bail();
                    };
                    self.push_int(i);
                    self.push(b".0");
                }
                Kind::Number(_) => self.verbatim(x)?,
                _ => return bail(),
            }
            return Ok(T::Scalar);
        }
        if let Some(x) = self.get(&ms, b"boolValue") {
            match x.kind {
                Kind::Null => self.push(b"false"),
                Kind::True | Kind::False => self.verbatim(x)?,
                _ => return bail(),
            }
            return Ok(T::Scalar);
        }
        if let Some(x) = self.get(&ms, b"arrayValue") {
            let values = match x.kind {
                Kind::Null => None,
                Kind::Object { .. } => {
                    let am = self.members(x.v0)?;
                    match self.get(&am, b"values") {
                        None => None,
                        Some(vs) if vs.kind == Kind::Array => Some(vs),
                        Some(_) => return bail(),
                    }
                }
                _ => return bail(),
            };
            self.out.push(b'[');
            if let Some(vs) = values {
                for (i, e) in self.elements(vs.v0)?.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.any_value(e)?;
                }
            }
            self.out.push(b']');
            return Ok(T::Container);
        }
        if let Some(x) = self.get(&ms, b"kvlistValue") {
            match x.kind {
                Kind::Null => self.push(b"{}"),
                Kind::Object { .. } => {
                    let km = self.members(x.v0)?;
                    match self.get(&km, b"values") {
                        None => self.push(b"{}"),
                        Some(vs) => self.attributes(vs, &mut None)?,
                    }
                }
                _ => return bail(),
            }
            return Ok(T::Container);
        }
        if let Some(x) = self.get(&ms, b"bytesValue") {
            self.verbatim(x)?;
            return Ok(Self::kind_of(x.kind));
        }
        self.push(b"null");
        Ok(T::Null)
    }

    /// A string or null value copied (absent: null); anything else bails.
    fn text_or_null(&mut self, v: Option<V>) -> R<()> {
        match v {
            None => self.push(b"null"),
            Some(v) if v.kind == Kind::Null => self.push(b"null"),
            Some(v) if matches!(v.kind, Kind::String(_)) => self.verbatim(v)?,
            Some(_) => return BAIL,
        }
        Ok(())
    }

    fn span(&mut self, v: V, resource: &[u8], scope: &[u8]) -> R<()> {
        let ms = self.object(v)?;
        self.push(b"{\"traceId\":");
        let has_trace = self.hex_id(self.get(&ms, b"traceId"), 16)?;
        self.push(b",\"spanId\":");
        let has_span = self.hex_id(self.get(&ms, b"spanId"), 8)?;
        if !has_trace || !has_span {
            return BAIL; // the reference: traceId and spanId are required
        }
        self.push(b",\"parentSpanId\":");
        self.hex_id(self.get(&ms, b"parentSpanId"), 8)?;
        self.push(b",\"name\":");
        self.text_or_null(self.get(&ms, b"name"))?;
        self.push(b",\"kind\":");
        match self.get(&ms, b"kind") {
            None => self.push(b"\"UNSPECIFIED\""),
            Some(k) => match k.kind {
                Kind::Number(n) if n.integer => {
                    let Some(i) = parse_i64(&self.s[n.start..n.end]) else {
                        return BAIL;
                    };
                    const NAMES: [&[u8]; 6] = [
                        b"\"UNSPECIFIED\"",
                        b"\"INTERNAL\"",
                        b"\"SERVER\"",
                        b"\"CLIENT\"",
                        b"\"PRODUCER\"",
                        b"\"CONSUMER\"",
                    ];
                    match usize::try_from(i).ok().and_then(|u| NAMES.get(u)) {
                        Some(name) => self.push(name),
                        None => self.push_int(i),
                    }
                }
                Kind::String(st) if !st.escaped => {
                    let raw = &self.s[st.start..st.end];
                    self.out.push(b'"');
                    let mut i = 0;
                    while i < raw.len() {
                        if raw[i..].starts_with(b"SPAN_KIND_") {
                            i += 10;
                        } else {
                            self.out.push(raw[i]);
                            i += 1;
                        }
                    }
                    self.out.push(b'"');
                }
                _ => return BAIL,
            },
        }
        let start = self.nanos(self.get(&ms, b"startTimeUnixNano"))?;
        let mut end = self.nanos(self.get(&ms, b"endTimeUnixNano"))?;
        if end == 0 {
            end = start;
        }
        self.push(b",\"startTimeUnixNano\":");
        self.push_int(start);
        self.push(b",\"endTimeUnixNano\":");
        self.push_int(end);
        self.push(b",\"attributes\":");
        match self.get(&ms, b"attributes") {
            None => self.push(b"{}"),
            Some(a) => self.attributes(a, &mut None)?,
        }
        self.push(b",\"events\":[");
        for (i, e) in self.list(self.get(&ms, b"events"))?.into_iter().enumerate() {
            let em = self.object(e)?;
            if i > 0 {
                self.out.push(b',');
            }
            self.push(b"{\"name\":");
            match self.get(&em, b"name") {
                Some(nv) if matches!(nv.kind, Kind::String(_)) => self.verbatim(nv)?,
                _ => self.push(b"null"),
            }
            let t = self.nanos(self.get(&em, b"timeUnixNano"))?;
            self.push(b",\"timeUnixNano\":");
            self.push_int(t);
            self.push(b",\"attributes\":");
            match self.get(&em, b"attributes") {
                None => self.push(b"{}"),
                Some(a) => self.attributes(a, &mut None)?,
            }
            self.out.push(b'}');
        }
        self.push(b"],\"status\":{\"code\":");
        let (code, message) = match self.get(&ms, b"status") {
            None => (None, None),
            Some(st) if st.kind == Kind::Null => (None, None),
            Some(st) => {
                let sm = self.object(st)?;
                (self.get(&sm, b"code"), self.get(&sm, b"message"))
            }
        };
        match code {
            None => self.push(b"0"),
            Some(c) => match c.kind {
                Kind::Number(n) if n.integer => {
                    let Some(i) = parse_i64(&self.s[n.start..n.end]) else {
                        return BAIL;
                    };
                    self.push_int(i);
                }
                Kind::String(st) if !st.escaped => {
                    let code = match &self.s[st.start..st.end] {
                        b"STATUS_CODE_OK" => b"1",
                        b"STATUS_CODE_ERROR" => b"2",
                        _ => b"0",
                    };
                    self.push(code);
                }
                _ => return BAIL,
            },
        }
        self.push(b",\"message\":");
        self.text_or_null(message)?;
        self.push(b"},\"scope\":");
        self.push(scope);
        self.push(b",\"resource\":");
        self.push(resource);
        self.out.push(b'}');
        Ok(())
    }

    fn log_record(&mut self, v: V, scope: &[u8]) -> R<()> {
        let ms = self.object(v)?;
        // the attributes first (the name may come from their event.name)
        let saved = std::mem::take(&mut self.out);
        let mut track = None;
        let got = match self.get(&ms, b"attributes") {
            None => {
                self.push(b"{}");
                Ok(())
            }
            Some(a) => self.attributes(a, &mut track),
        };
        let attrs = std::mem::replace(&mut self.out, saved);
        got?;
        self.push(b"{\"name\":");
        let event_name = self.get(&ms, b"eventName");
        match event_name.map(|e| e.kind) {
            Some(Kind::String(st)) if st.end > st.start => self.verbatim(event_name.unwrap())?,
            None | Some(Kind::Null) | Some(Kind::String(_)) => match track {
                None => self.push(b"null"),
                Some((a, b, T::Str | T::Null)) => self.out.extend_from_slice(&attrs[a..b]),
                Some(_) => return BAIL,
            },
            Some(_) => return BAIL,
        }
        self.push(b",\"traceId\":");
        self.hex_id(self.get(&ms, b"traceId"), 16)?;
        self.push(b",\"spanId\":");
        self.hex_id(self.get(&ms, b"spanId"), 8)?;
        let mut t = self.nanos(self.get(&ms, b"timeUnixNano"))?;
        let observed = self.nanos(self.get(&ms, b"observedTimeUnixNano"))?;
        if t == 0 {
            t = observed;
        }
        self.push(b",\"timeUnixNano\":");
        self.push_int(t);
        self.push(b",\"severityText\":");
        match self.get(&ms, b"severityText") {
            None => self.push(b"null"),
            Some(x) => self.verbatim(x)?,
        }
        self.push(b",\"body\":");
        match self.get(&ms, b"body") {
            None => self.push(b"null"),
            Some(x) => {
                self.any_value(x)?;
            }
        }
        self.push(b",\"attributes\":");
        self.push(&attrs);
        self.push(b",\"scope\":");
        self.push(scope);
        self.out.push(b'}');
        Ok(())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The `size` bytes of a padded base64 id of canonical length (16 bytes: 22 characters and
/// `==`, 8 bytes: 11 and `=`); other spellings bail (the reference decides them).
fn base64_id(raw: &[u8], size: usize) -> R<Vec<u8>> {
    let chars = (size * 4).div_ceil(3);
    let pad = raw.len().checked_sub(chars).ok_or(crate::json::Bail)?;
    if !raw.len().is_multiple_of(4) || pad > 2 || raw[chars..].iter().any(|&c| c != b'=') {
        return bail();
    }
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut out = Vec::with_capacity(size);
    for &c in &raw[..chars] {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return bail(),
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if out.len() != size {
        return bail();
    }
    Ok(out)
}

/// Bail when validated JSON text holds an integer of more than 18 digits (outside strings).
fn long_int_free(raw: &[u8]) -> R<()> {
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c == b'"' {
            let mut sc = Scanner { s: raw, pos: i };
            sc.string()?;
            i = sc.pos;
        } else if c == b'-' || c.is_ascii_digit() {
            // one number token: an integer when it has no fraction and no exponent
            let mut k = i;
            while k < raw.len() && matches!(raw[k], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                k += 1;
            }
            let tok = &raw[i..k];
            if !tok.iter().any(|c| matches!(c, b'.' | b'e' | b'E'))
                && tok.iter().filter(|c| c.is_ascii_digit()).count() > 18
            {
                return BAIL;
            }
            i = k;
        } else {
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Option<String> {
        decode_doc(s.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    const SPAN: &str = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"scope":{"name":"lib"},"spans":[{"traceId":"0AF7651916CD43DD8448EB211C80319C","spanId":"B7AD6B7169203331","parentSpanId":"","name":"chat gpt","kind":3,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":1700000001000000000,"attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"n","value":{"intValue":"42"}},{"key":"d","value":{"doubleValue":2}},{"key":"b","value":{"boolValue":true}},{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":1}]}}},{"key":"kv","value":{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}}],"events":[{"name":"e","timeUnixNano":"5","attributes":[]}],"status":{"code":"STATUS_CODE_ERROR","message":"boom"}}]}]}]}"#;

    #[test]
    fn a_span_in_the_reference_shape() {
        let got = dec(SPAN).unwrap();
        assert_eq!(
            got,
            r#"[[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","parentSpanId":null,"name":"chat gpt","kind":"CLIENT","startTimeUnixNano":1700000000000000000,"endTimeUnixNano":1700000001000000000,"attributes":{"gen_ai.operation.name":"chat","n":42,"d":2.0,"b":true,"a":["x",1],"kv":{"k":"v"}},"events":[{"name":"e","timeUnixNano":5,"attributes":{}}],"status":{"code":2,"message":"boom"},"scope":"lib","resource":{"service.name":"svc"}}],[]]"#
        );
    }

    #[test]
    fn log_records_take_their_name_from_event_name() {
        let doc = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"observedTimeUnixNano":"7","traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","attributes":[{"key":"event.name","value":{"stringValue":"gen_ai.x"}}],"body":{"kvlistValue":{"values":[]}}}]}]}]}"#;
        assert_eq!(
            dec(doc).unwrap(),
            r#"[[],[{"name":"gen_ai.x","traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","timeUnixNano":7,"severityText":null,"body":{},"attributes":{"event.name":"gen_ai.x"},"scope":null}]]"#
        );
    }

    #[test]
    fn bails_on_what_the_reference_decides() {
        for bad in [
            // not JSON, not an object, no resourceSpans
            "{",
            "[]",
            "{\"x\":1}",
            // snake_case, base64 ids, missing ids, negative or float times
            &SPAN.replace("traceId", "trace_id"),
            &SPAN.replace(
                "0AF7651916CD43DD8448EB211C80319C",
                "CvdlGRbNQ92ESOshHIAxnA=",
            ),
            &SPAN.replace(
                "0AF7651916CD43DD8448EB211C80319C",
                "CvdlGRbNQ92ESOshHIAx!A==",
            ),
            &SPAN.replace("\"spanId\":\"B7AD6B7169203331\",", ""),
            &SPAN.replace("\"1700000000000000000\"", "-1"),
            &SPAN.replace("\"1700000000000000000\"", "1.7e18"),
            // an operation name that is no string, a bad resource, an int beyond 18 digits
            &SPAN.replace("{\"stringValue\":\"chat\"}", "{\"intValue\":1}"),
            &SPAN.replace(
                "\"resource\":{\"attributes\":[",
                "\"resource\":{\"attributes\":[5,",
            ),
            &SPAN.replace(
                "{\"stringValue\":\"v\"}",
                "{\"stringValue\":[12345678901234567890]}",
            ),
            &SPAN.replace("{\"intValue\":\"42\"}", "{\"intValue\":\"4 2\"}"),
        ] {
            assert_eq!(dec(bad), None, "{bad}");
        }
    }

    #[test]
    fn base64_ids_as_hex() {
        let doc = SPAN
            .replace(
                "0AF7651916CD43DD8448EB211C80319C",
                "CvdlGRbNQ92ESOshHIAxnA==",
            )
            .replace("B7AD6B7169203331", "t61rcWkgMzE=");
        assert_eq!(dec(&doc), dec(SPAN));
        assert_eq!(base64_id(b"AAAAAAAAAAA=", 8), Ok(vec![0; 8]));
        assert!(base64_id(b"AAAAAAAAAAAA", 8).is_err());
        assert!(base64_id(b"AAAAAAAAAA==", 8).is_err());
    }

    #[test]
    fn lines_and_blank_lines() {
        let data = format!("{SPAN}\r\n \t\n\n{{\"resourceSpans\":[]}}\nnot json");
        let docs = scan(data.as_bytes(), true);
        let lines: Vec<i64> = docs.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![1, 4, 5]);
        assert!(docs[0].text.is_some());
        assert_eq!(docs[1].text.as_deref(), Some(&b"[[],[]]"[..]));
        assert!(docs[2].text.is_none());
        assert_eq!(&data.as_bytes()[docs[2].start..docs[2].end], b"not json");
        assert_eq!(docs[0].end - docs[0].start, SPAN.len());
    }

    /// The tape accepts exactly what `json::Scanner::value` accepts (validation is shared).
    #[test]
    fn tape_validates_as_the_scanner() {
        let base = SPAN.as_bytes();
        let tokens: [&[u8]; 12] = [
            b"{", b"}", b"[", b"]", b",", b":", b"\"", b"\\", b"1e999", b"-", b"nul", b"\xff",
        ];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let deep = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let mut inputs: Vec<Vec<u8>> = vec![deep.into_bytes(), too_deep.into_bytes()];
        for _ in 0..3000 {
            let mut v = base.to_vec();
            for _ in 0..(next() % 3) {
                let i = (next() as usize) % (v.len() + 1);
                if next() % 2 == 0 && i < v.len() {
                    v.remove(i);
                } else {
                    let t = tokens[(next() as usize) % tokens.len()];
                    v.splice(i..i, t.iter().copied());
                }
            }
            inputs.push(v);
        }
        let mut accepted = 0;
        for v in &inputs {
            let mut a = Scanner::new(v);
            let ok_a = a.value(0).is_ok();
            let mut b = Scanner::new(v);
            let ok_b = build(&mut b, &mut Vec::new(), 0, None).is_ok();
            assert_eq!(ok_a, ok_b, "{}", String::from_utf8_lossy(v));
            if ok_a {
                assert_eq!(a.pos, b.pos);
                accepted += 1;
            }
        }
        assert!(accepted > 100 && accepted < inputs.len(), "{accepted}");
    }

    #[test]
    fn long_ints_in_copied_values() {
        assert!(long_int_free(b"[1,2.5,\"12345678901234567890\"]").is_ok());
        assert!(long_int_free(b"[1234567890123456789.5,1e123456789012345678901]").is_ok());
        assert!(long_int_free(b"[1234567890123456789]").is_err());
        assert!(long_int_free(b"{\"a\":-1234567890123456789}").is_err());
    }
}
