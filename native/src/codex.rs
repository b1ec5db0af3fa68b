//! The Codex CLI rollout scanner (`replaykit.io.codex`, its native path): one rollout's rows
//! as the reference (`_file_rows` / `_line_rows`, then `_counts_to_next_call` and
//! `_move_usage`) makes them, column by column.
//!
//! Only the mapping is Codex's own: the lines are split and parsed by `lines.rs` into the one
//! value tree of the crate (`toh::V` over `json.rs`'s tokenizer), the columns and the file
//! driver (threads, file order, the row and run ranges) are the Claude Code scanner's
//! (`transcripts::CcOut`, `transcripts::scan_files`).
//!
//! The mapping is the reference's, line for line: one row per line (two for the first tool
//! call of a model call: the call's own row first, payload with `contentPart: "call"`); both
//! layouts (`{timestamp, type, payload}` lines, and the mid-2025 layout of a bare session
//! header, bare Responses items and `{"record_type": ...}` markers); a model call is the run
//! of model output items between inputs, its tokens the `token_count` that follows it (or,
//! in the Codex 0.40 files whose counts lead their call, the one before it), moved onto the
//! call's first row.
//!
//! It decides only files the reference reads without a single quarantine row and without any
//! shape it is not sure about (a line that is not a strict JSON object, a type that is not a
//! non-empty string, a payload that is not an object, a token count that is not a
//! non-negative 64-bit integer, a tool argument string that Python's `json.loads` might read
//! differently, ...): then it returns Err and the caller reads the whole file with the
//! reference. The differential tests (`tests/io/test_native_codex.py`) check the results are
//! the same.
//!
//! Per file, the one run (none for a file without rows) carries the session id, the first
//! row's `ts` as `created_at`, and as its only attribute `("meta", canonical JSON of the
//! session_meta payload's members the header reads)` when the file has one: the caller builds
//! the run header from it exactly as the reference does.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::json::{Bail, R};
use crate::lines::{hash32, objects, parse_text, str_of, truthy, write, write_over, Over, V};
use crate::transcripts::{push_opt, scan_files, text_of, tokens, CcFiles, CcOut, RunHead};

const MODEL_OUT: [&[u8]; 6] = [
    b"reasoning",
    b"function_call",
    b"custom_tool_call",
    b"local_shell_call",
    b"web_search_call",
    b"image_generation_call",
];
const TOOL_CALLS: [&[u8]; 5] = [
    b"function_call",
    b"custom_tool_call",
    b"local_shell_call",
    b"web_search_call",
    b"image_generation_call",
];
const TOOL_OUTPUTS: [&[u8]; 3] = [
    b"function_call_output",
    b"custom_tool_call_output",
    b"local_shell_call_output",
];
const MIRRORS: [&[u8]; 6] = [
    b"user_message",
    b"agent_message",
    b"agent_reasoning",
    b"agent_reasoning_raw_content",
    b"agent_message_delta",
    b"agent_reasoning_delta",
];

/// The session_meta members `io/codex._header` reads.
const HEADER_KEYS: [&[u8]; 9] = [
    b"cli_version",
    b"cwd",
    b"forked_from_id",
    b"git",
    b"id",
    b"model_provider",
    b"originator",
    b"source",
    b"timestamp",
];

fn one_of(t: Option<&[u8]>, set: &[&[u8]]) -> bool {
    t.is_some_and(|t| set.contains(&t))
}

/// A line in the current envelope (`_envelope`): its type, payload (None: absent or null)
/// and timestamp, and the line as written (the rows' payload).
struct Env<'v, 'a> {
    typ: &'v [u8],
    payload: Option<&'v V<'a>>,
    ts: Option<&'v [u8]>,
    written: &'v V<'a>,
    no: usize,
}

/// The first line of a mid-2025 rollout (`_legacy_meta`).
fn legacy_meta(doc: &V<'_>) -> bool {
    let V::Obj(members) = doc else { return false };
    doc.get(b"type").is_none()
        && doc.get(b"payload").is_none()
        && matches!(doc.get(b"id"), Some(V::Str(_)))
        && doc.get(b"timestamp").is_some()
        && (doc.get(b"instructions").is_some()
            || doc.get(b"git").is_some()
            || members
                .iter()
                .all(|(k, _)| matches!(&k[..], b"id" | b"timestamp" | b"instructions" | b"git")))
}

fn is_marker(doc: &V<'_>) -> bool {
    doc.get(b"record_type").is_some() && doc.get(b"type").is_none()
}

/// A payload's `type` as the reference reads it: a string, or None (absent or null);
/// anything else is a shape the reference may trip on (an unhashable set member): Err.
fn ptype_of<'v>(pl: Option<&'v V<'_>>) -> R<Option<&'v [u8]>> {
    match pl.and_then(|p| p.get(b"type")) {
        None | Some(V::Null) => Ok(None),
        Some(V::Str(s)) => Ok(Some(s)),
        _ => Err(Bail),
    }
}

fn is_output(e: &Env<'_, '_>) -> R<bool> {
    let pt = ptype_of(e.payload)?;
    Ok(e.typ == b"response_item"
        && (one_of(pt, &MODEL_OUT)
            || (pt == Some(b"message")
                && str_of(e.payload.and_then(|p| p.get(b"role"))) == Some(b"assistant"))))
}

fn is_count(e: &Env<'_, '_>) -> R<bool> {
    let pt = ptype_of(e.payload)?;
    let info = e.payload.and_then(|p| p.get(b"info"));
    Ok(e.typ == b"event_msg"
        && pt == Some(b"token_count")
        && matches!(info, Some(V::Obj(_)))
        && matches!(
            info.and_then(|i| i.get(b"last_token_usage")),
            Some(V::Obj(_))
        ))
}

/// One row, before the file's post-passes move the tokens.
struct Row<'v, 'a> {
    seq: i64,
    line: usize,
    typ: Vec<u8>,
    kind: &'static [u8],
    ts: Option<&'v [u8]>,
    turn: Option<i64>,
    step: Option<i64>,
    event_id: Option<&'v [u8]>,
    ref_id: Option<Vec<u8>>,
    tool_name: Option<Vec<u8>>,
    args_hash: Option<[u8; 32]>,
    is_error: bool,
    finish: bool,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    usage: bool,
    reasoning: bool,
    /// borrowed from the line's tree where the text is one string of it (no copy)
    text: Option<Cow<'v, [u8]>>,
    written: &'v V<'a>,
    call_part: bool,
    next_call: bool,
}

struct St {
    turn: i64,
    step: i64,
    in_call: bool,
    call: Option<Vec<u8>>,
    total: Option<Vec<u8>>,
    tools: HashMap<Option<Vec<u8>>, Vec<u8>>,
    leading: bool,
}

/// Whether Python's `json.loads` could read `s` as an object (its first byte after
/// whitespace is `{`).
fn may_be_object(s: &[u8]) -> bool {
    s.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(&b'{')
}

/// True when Python's `json.loads` surely fails on `s`, given that the strict tree (`json.rs`,
/// the crate's one tokenizer) refused it. The tree refuses exactly standard JSON's errors plus
/// what replaykit's rules add (depth > 200, unpaired surrogate escapes, integers of more than
/// 4300 digits, which `json.loads` refuses too, numbers that overflow a double); `json.loads`
/// accepts standard JSON plus `NaN` / `Infinity` / `-Infinity`. So `json.loads` surely fails
/// unless the text holds one of those literals, a `\u` escape, more than 200 opening brackets,
/// or a number that may overflow (an exponent after a digit, or a run of 300 digits); then
/// this is not sure (false).
fn py_json_fails(s: &[u8]) -> bool {
    let has = |w: &[u8]| memchr::memmem::find(s, w).is_some();
    if has(b"NaN") || has(b"Infinity") || has(b"\\u") {
        return false;
    }
    if s.iter().filter(|&&b| b == b'[' || b == b'{').count() > crate::json::MAX_DEPTH {
        return false;
    }
    let mut run = 0usize;
    for (i, &b) in s.iter().enumerate() {
        if b.is_ascii_digit() {
            run += 1;
            if run >= 300 {
                return false;
            }
        } else {
            if matches!(b, b'e' | b'E') && i > 0 && s[i - 1].is_ascii_digit() {
                return false;
            }
            run = 0;
        }
    }
    true
}

/// `args_hash` and `canonical_json` of a tool argument that is a string: hashed by the JSON
/// value it holds when it holds one (the strict reader), else as the string.
fn string_args(s: &[u8]) -> R<([u8; 32], Vec<u8>)> {
    let mut text = Vec::new();
    crate::canon::write_str(s, &mut text);
    match parse_text(s) {
        Ok(v) => {
            let mut canon = Vec::new();
            write(&v, &mut canon);
            Ok((hash32(&canon), text))
        }
        Err(_) if py_json_fails(s) => Ok((hash32(&text), text)),
        Err(_) => Err(Bail), // not JSON, but it might be to Python's reader: not ours
    }
}

/// `args_hash` and `canonical_json` of a tool call's arguments (`_args`).
fn args_of(ptype: &[u8], pl: Option<&V<'_>>) -> R<([u8; 32], Vec<u8>)> {
    let get = |k: &[u8]| pl.and_then(|p| p.get(k));
    let raw = match ptype {
        b"custom_tool_call" => match get(b"input") {
            None | Some(V::Null) => return string_args(b""),
            Some(v) => v,
        },
        b"function_call" => match get(b"arguments") {
            Some(V::Str(s)) => {
                // json.loads: a value the strict tree reads the same; a string or text it
                // does not read (json.loads may: NaN, lone surrogates): not ours
                let v = match parse_text(s) {
                    Ok(V::Str(_)) => return Err(Bail), // hashed again as the JSON it holds
                    Ok(v) => v,
                    Err(_) if py_json_fails(s) => return string_args(s),
                    Err(_) => return Err(Bail),
                };
                let mut canon = Vec::new();
                write(&v, &mut canon);
                return Ok((hash32(&canon), canon));
            }
            None | Some(V::Null) => return Ok((hash32(b"{}"), b"{}".to_vec())),
            Some(v) => v,
        },
        _ => {
            let v = if pl.is_some_and(|p| p.get(b"action").is_some()) {
                get(b"action")
            } else if pl.is_some_and(|p| p.get(b"arguments").is_some()) {
                get(b"arguments")
            } else {
                get(b"input")
            };
            match v {
                None | Some(V::Null) => return Ok((hash32(b"{}"), b"{}".to_vec())),
                Some(v) => v,
            }
        }
    };
    if let V::Str(s) = raw {
        return string_args(s);
    }
    let mut canon = Vec::new();
    write(raw, &mut canon);
    Ok((hash32(&canon), canon))
}

/// `text_of(v)`, borrowing from the tree when the text is one of its strings (a string, or a
/// list of one part: the usual message content).
fn text_cow<'v>(v: Option<&'v V<'_>>) -> Option<Cow<'v, [u8]>> {
    match v {
        Some(V::Str(s)) => Some(Cow::Borrowed(&s[..])),
        Some(V::Arr(items)) if items.len() == 1 => {
            let one: &[u8] = match &items[0] {
                V::Str(s) => s,
                p @ V::Obj(_) => match p.get(b"text") {
                    Some(V::Str(t)) => t,
                    None | Some(V::Null) => str_of(p.get(b"thinking")).unwrap_or(b""),
                    _ => b"",
                },
                _ => b"",
            };
            Some(Cow::Borrowed(one))
        }
        other => text_of(other).map(Cow::Owned),
    }
}

/// A reasoning item's readable text (`_reasoning_text`).
fn reasoning_text(pl: Option<&V<'_>>) -> Option<Vec<u8>> {
    for key in [&b"summary"[..], b"content"] {
        if let Some(V::Arr(parts)) = pl.and_then(|p| p.get(key)) {
            let texts: Vec<&[u8]> = parts
                .iter()
                .filter_map(|p| match p {
                    V::Obj(_) => str_of(p.get(b"text")),
                    _ => None,
                })
                .collect();
            if !texts.is_empty() {
                return Some(texts.join(&b"\n\n"[..]));
            }
        }
    }
    None
}

/// A decoded tool output document's failure mark (`_output_error` of a dict).
fn doc_error(doc: &V<'_>) -> bool {
    if let Some(meta @ V::Obj(_)) = doc.get(b"metadata") {
        match meta.get(b"exit_code") {
            Some(c @ V::Int(_)) => return truthy(Some(c)),
            Some(V::True) => return true,
            Some(V::False) => return false,
            _ => {}
        }
    }
    matches!(doc.get(b"success"), Some(V::False))
}

/// `(_output_error(out), _output_text(out))` of a tool output.
fn output_of<'v>(out: Option<&'v V<'_>>) -> R<(bool, Option<Cow<'v, [u8]>>)> {
    match out {
        Some(V::Str(s)) => {
            let whole = || Some(Cow::Borrowed(&s[..]));
            if !may_be_object(s) {
                return Ok((false, whole())); // json.loads gives no object: the text as is
            }
            match parse_text(s) {
                Ok(doc @ V::Obj(_)) => {
                    let text = match doc.get(b"output") {
                        Some(V::Str(o)) => Some(Cow::Owned(o.to_vec())),
                        _ => whole(),
                    };
                    Ok((doc_error(&doc), text))
                }
                Ok(_) => Ok((false, whole())),
                // json.loads may read an object the strict tree does not (NaN, ...)
                Err(_) if py_json_fails(s) => Ok((false, whole())),
                Err(_) => Err(Bail),
            }
        }
        Some(o @ V::Obj(_)) => {
            let text = match o.get(b"content") {
                Some(V::Str(c)) => Some(Cow::Borrowed(&c[..])),
                None | Some(V::Null) => {
                    let mut t = Vec::new();
                    write(o, &mut t);
                    Some(Cow::Owned(t))
                }
                c => text_cow(c),
            };
            Ok((doc_error(o), text))
        }
        other => Ok((false, text_cow(other))),
    }
}

/// Scan one Codex rollout (its bytes; `fallback`: the session id of a file whose
/// session_meta names none, from its name; `source`: its rows' `source`). Err: the reference
/// must read the file.
pub fn scan(file: &[u8], fallback: &[u8], source: &[u8]) -> R<CcOut> {
    let docs = objects(file).ok_or(Bail)?;
    let legacy = docs.first().is_some_and(|(_, d)| legacy_meta(d));
    let mut lines: Vec<Env<'_, '_>> = Vec::with_capacity(docs.len());
    for (k, (no, doc)) in docs.iter().enumerate() {
        let e = if legacy && k == 0 {
            Env {
                typ: b"session_meta",
                payload: Some(doc),
                ts: str_of(doc.get(b"timestamp")),
                written: doc,
                no: *no,
            }
        } else if is_marker(doc) {
            Env {
                typ: b"state",
                payload: None,
                ts: None,
                written: doc,
                no: *no,
            }
        } else if legacy {
            Env {
                typ: b"response_item",
                payload: Some(doc),
                ts: None,
                written: doc,
                no: *no,
            }
        } else {
            let typ = match doc.get(b"type") {
                Some(V::Str(t)) if !t.is_empty() => &t[..],
                _ => return Err(Bail), // missing_type
            };
            let payload = match doc.get(b"payload") {
                None | Some(V::Null) => None,
                Some(p @ V::Obj(_)) => Some(p),
                _ => return Err(Bail), // bad_payload
            };
            Env {
                typ,
                payload,
                ts: str_of(doc.get(b"timestamp")),
                written: doc,
                no: *no,
            }
        };
        lines.push(e);
    }
    // the session: the first session_meta's payload
    let meta = lines
        .iter()
        .find(|e| e.typ == b"session_meta" && e.payload.is_some())
        .and_then(|e| e.payload);
    let sid: &[u8] = match meta.and_then(|m| m.get(b"id")) {
        Some(V::Str(s)) if !s.is_empty() => s,
        _ => fallback,
    };
    let ui = |what: &[u8]| -> R<bool> {
        for e in &lines {
            if e.typ == b"event_msg" && ptype_of(e.payload)? == Some(what) {
                return Ok(true);
            }
        }
        Ok(false)
    };
    let has_tasks = ui(b"task_started")?;
    let has_ui_user = ui(b"user_message")?;
    let mut leading = false;
    for e in &lines {
        if is_output(e)? {
            break;
        }
        if is_count(e)? {
            leading = true;
            break;
        }
    }
    let mut st = St {
        turn: 0,
        step: 0,
        in_call: false,
        call: None,
        total: None,
        tools: HashMap::new(),
        leading,
    };
    let mut rows: Vec<Row<'_, '_>> = Vec::with_capacity(lines.len() + lines.len() / 8);
    for e in &lines {
        line_rows(e, sid, &mut st, has_tasks, has_ui_user, &mut rows)?;
    }
    if st.leading {
        counts_to_next_call(&mut rows)?;
    }
    move_usage(&mut rows)?;

    let mut out = CcOut::new(rows.len(), file.len());
    if !rows.is_empty() {
        let mut attrs = Vec::new();
        if let Some(V::Obj(members)) = meta {
            // the members the run's header reads (not the long instructions)
            let mut j = vec![b'{'];
            for (k, v) in members
                .iter()
                .filter(|(k, _)| HEADER_KEYS.contains(&&k[..]))
            {
                if j.len() > 1 {
                    j.push(b',');
                }
                crate::canon::write_str(k, &mut j);
                j.push(b':');
                write(v, &mut j);
            }
            j.push(b'}');
            attrs.push(("meta", j));
        }
        out.runs.push(RunHead {
            run_id: sid.to_vec(),
            parent: None,
            created_at: rows[0].ts.map(|t| t.to_vec()),
            attrs,
            rows: rows.len() as i64,
        });
    }
    for r in &rows {
        out.run.push(0);
        out.run_id.push(sid);
        out.parent_run_id.push_null();
        out.source.push(source);
        out.seq.push(r.seq);
        out.line.push(r.line as i64);
        out.typ.push(&r.typ);
        out.kind.push(r.kind);
        push_opt(&mut out.ts, r.ts);
        out.turn.push(r.turn);
        out.step.push(r.step);
        push_opt(&mut out.event_id, r.event_id);
        push_opt(&mut out.ref_id, r.ref_id.as_deref());
        push_opt(&mut out.tool_name, r.tool_name.as_deref());
        push_opt(&mut out.args_hash, r.args_hash.as_ref().map(|h| &h[..]));
        out.is_error.push(r.is_error);
        push_opt(&mut out.finish, r.finish.then_some(&b"unknown"[..]));
        out.input_tokens.push(r.input_tokens);
        out.output_tokens.push(r.output_tokens);
        push_opt(
            &mut out.chunk_type,
            if r.usage {
                Some(&b"usage"[..])
            } else if r.reasoning {
                Some(&b"reasoning"[..])
            } else {
                None
            },
        );
        push_opt(&mut out.text, r.text.as_deref());
        let p = &mut out.payload.data;
        if r.call_part {
            write_over(r.written, &[(b"contentPart", Over::Word(b"call"))], p);
        } else {
            write(r.written, p);
        }
        out.payload.commit();
    }
    if out.overflows() {
        return Err(Bail);
    }
    Ok(out)
}

/// The rows of one line (`_line_rows`), appended to `rows`.
fn line_rows<'v, 'a>(
    e: &Env<'v, 'a>,
    sid: &[u8],
    st: &mut St,
    has_tasks: bool,
    has_ui_user: bool,
    rows: &mut Vec<Row<'v, 'a>>,
) -> R<()> {
    let typ = e.typ;
    let pl = e.payload;
    let get = |k: &[u8]| pl.and_then(|p| p.get(k));
    let sget = |k: &[u8]| str_of(pl.and_then(|p| p.get(k)));
    let ptype = ptype_of(pl)?;
    let ptype_ne = ptype.filter(|t| !t.is_empty());
    let mut full_type = typ.to_vec();
    if let Some(pt) = ptype_ne {
        if typ == b"response_item" || typ == b"event_msg" {
            full_type.push(b'.');
            full_type.extend_from_slice(pt);
        }
    }
    let seq0 = rows.len() as i64;
    let mut r = Row {
        seq: seq0,
        line: e.no,
        typ: full_type,
        kind: b"other",
        ts: e.ts,
        turn: None,
        step: None,
        event_id: None,
        ref_id: None,
        tool_name: None,
        args_hash: None,
        is_error: false,
        finish: false,
        input_tokens: None,
        output_tokens: None,
        usage: false,
        reasoning: false,
        text: None,
        written: e.written,
        call_part: false,
        next_call: false,
    };
    let mut opened = false;
    let new_call = |st: &mut St| {
        st.step += 1;
        st.in_call = true;
        st.call =
            Some(format!("{}:{}.{}", String::from_utf8_lossy(sid), st.turn, st.step).into_bytes());
    };
    let owned = |s: Option<&'v [u8]>| s.map(Cow::Borrowed);
    match typ {
        b"session_meta" => {
            r.kind = b"session";
            r.event_id = sget(b"id");
        }
        b"turn_context" => r.kind = b"session",
        b"compacted" => {
            r.kind = b"checkpoint";
            r.text = owned(sget(b"message"));
        }
        b"event_msg" => match ptype {
            Some(b"task_started") => {
                st.turn += 1;
                st.step = 0;
                st.in_call = false;
                r.kind = b"turn_start";
                r.event_id = match get(b"turn_id") {
                    None | Some(V::Null) => None,
                    Some(V::Str(s)) => Some(s),
                    _ => return Err(Bail), // kept as its text by the reference
                };
            }
            Some(t @ (b"task_complete" | b"turn_aborted")) => {
                r.kind = b"turn_end";
                r.is_error = t == b"turn_aborted";
                r.text = owned(sget(b"last_agent_message").or_else(|| sget(b"reason")));
            }
            Some(b"token_count") => {
                let info = get(b"info");
                if let (Some(info @ V::Obj(_)), Some(last @ V::Obj(_))) =
                    (info, info.and_then(|i| i.get(b"last_token_usage")))
                {
                    let key = match info.get(b"total_token_usage") {
                        None | Some(V::Null) => None,
                        Some(t) => {
                            let mut k = Vec::new();
                            write(t, &mut k);
                            Some(k)
                        }
                    };
                    if key.is_none() || key != st.total {
                        st.total = key;
                        let ahead = st.leading && !st.in_call;
                        r.kind = if st.call.is_some() && !ahead {
                            b"model_chunk"
                        } else {
                            b"other"
                        };
                        r.usage = true;
                        r.ref_id = if ahead { None } else { st.call.clone() };
                        r.next_call = ahead;
                        r.input_tokens = tokens(last.get(b"input_tokens"))?;
                        r.output_tokens = tokens(last.get(b"output_tokens"))?;
                    }
                }
                st.in_call = false;
            }
            Some(b"user_message") if !has_tasks => {
                st.turn += 1;
                st.step = 0;
                st.in_call = false;
                r.text = owned(sget(b"message"));
            }
            Some(b"error" | b"stream_error") => {
                r.kind = b"error";
                r.is_error = true;
                r.text = owned(sget(b"message"));
            }
            Some(t) if MIRRORS.contains(&t) => {
                r.text = owned(match get(b"message") {
                    Some(V::Str(s)) => Some(&s[..]),
                    _ => sget(b"text"),
                });
            }
            _ => {}
        },
        b"response_item" => {
            let assistant = sget(b"role") == Some(b"assistant");
            if (ptype == Some(b"message") && assistant) || one_of(ptype, &MODEL_OUT) {
                if !st.in_call {
                    new_call(st);
                    opened = one_of(ptype, &TOOL_CALLS);
                }
            } else if ptype == Some(b"message") || one_of(ptype, &TOOL_OUTPUTS) {
                st.in_call = false;
            }
            match ptype {
                Some(b"message") => {
                    let text = text_cow(get(b"content"));
                    if assistant {
                        r.kind = b"model_response";
                        r.ref_id = st.call.clone();
                    } else if sget(b"role") == Some(b"user") {
                        if !has_tasks
                            && !has_ui_user
                            && !text.as_deref().unwrap_or(b"").starts_with(b"<")
                        {
                            st.turn += 1;
                            st.step = 0;
                        }
                        r.kind = b"user_message";
                    }
                    r.text = text;
                }
                Some(b"reasoning") => {
                    r.kind = b"model_chunk";
                    r.reasoning = true;
                    r.ref_id = st.call.clone();
                    r.text = reasoning_text(pl).map(Cow::Owned);
                }
                Some(t) if TOOL_CALLS.contains(&t) => {
                    let call_id = if truthy(get(b"call_id")) {
                        get(b"call_id")
                    } else {
                        get(b"id")
                    };
                    let call_id = str_of(call_id).map(|s| s.to_vec());
                    let name = sget(b"name").unwrap_or(t).to_vec();
                    let (hash, text) = args_of(t, pl)?;
                    st.tools.insert(call_id.clone(), name.clone());
                    r.kind = b"tool_call";
                    r.ref_id = call_id;
                    r.tool_name = Some(name);
                    r.args_hash = Some(hash);
                    r.text = Some(Cow::Owned(text));
                }
                Some(t) if TOOL_OUTPUTS.contains(&t) => {
                    let call_id = sget(b"call_id").map(|s| s.to_vec());
                    let (err, text) = output_of(get(b"output"))?;
                    r.kind = b"tool_result";
                    r.tool_name = st.tools.get(&call_id).cloned();
                    r.ref_id = call_id;
                    r.is_error = err;
                    r.text = text;
                }
                _ => {}
            }
        }
        _ => {}
    }
    r.turn = (st.turn != 0).then_some(st.turn);
    let no_step = r.kind == b"turn_start"
        || r.kind == b"session"
        || (typ == b"event_msg" && ptype == Some(b"user_message"));
    r.step = (st.step != 0 && !no_step).then_some(st.step);
    if opened {
        let call = Row {
            seq: seq0,
            line: r.line,
            typ: r.typ.clone(),
            kind: b"model_response",
            ts: r.ts,
            turn: r.turn,
            step: r.step,
            event_id: r.event_id,
            ref_id: st.call.clone(),
            tool_name: None,
            args_hash: None,
            is_error: r.is_error,
            finish: false,
            input_tokens: None,
            output_tokens: None,
            usage: false,
            reasoning: false,
            text: None,
            written: r.written,
            call_part: true,
            next_call: false,
        };
        r.seq = seq0 + 1;
        rows.push(call);
    }
    rows.push(r);
    Ok(())
}

fn add_tokens(to: Option<i64>, n: Option<i64>) -> R<Option<i64>> {
    match n {
        None => Ok(to),
        Some(n) => to.unwrap_or(0).checked_add(n).map(Some).ok_or(Bail),
    }
}

fn is_model(r: &Row<'_, '_>) -> bool {
    r.kind == b"model_response" || r.kind == b"model_chunk"
}

/// `_counts_to_next_call`: a count read while no call was open names the call that opens next.
fn counts_to_next_call(rows: &mut [Row<'_, '_>]) -> R<()> {
    let mut pending: Vec<usize> = Vec::new();
    for i in 0..rows.len() {
        if rows[i].next_call {
            pending.push(i);
        } else if !pending.is_empty()
            && is_model(&rows[i])
            && rows[i].ref_id.as_ref().is_some_and(|r| !r.is_empty())
        {
            for &c in &pending {
                rows[c].ref_id = rows[i].ref_id.clone();
                let (it, ot) = (rows[c].input_tokens, rows[c].output_tokens);
                rows[i].input_tokens = add_tokens(rows[i].input_tokens, it)?;
                rows[i].output_tokens = add_tokens(rows[i].output_tokens, ot)?;
                rows[c].input_tokens = None;
                rows[c].output_tokens = None;
            }
            pending.clear();
        }
    }
    Ok(())
}

/// `_move_usage`: each count's tokens onto the first row of the call it reports; that row
/// also gets the call's finish (`unknown`).
fn move_usage(rows: &mut [Row<'_, '_>]) -> R<()> {
    let mut first: HashMap<Vec<u8>, usize> = HashMap::new();
    for i in 0..rows.len() {
        if !is_model(&rows[i]) {
            continue;
        }
        let Some(rf) = rows[i].ref_id.clone() else {
            continue;
        };
        if rows[i].usage {
            match first.get(&rf) {
                None => {
                    first.insert(rf, i);
                    rows[i].finish = true;
                }
                Some(&h) => {
                    let (it, ot) = (rows[i].input_tokens, rows[i].output_tokens);
                    rows[h].input_tokens = add_tokens(rows[h].input_tokens, it)?;
                    rows[h].output_tokens = add_tokens(rows[h].output_tokens, ot)?;
                    rows[i].input_tokens = None;
                    rows[i].output_tokens = None;
                    rows[i].kind = b"other";
                }
            }
        } else if let std::collections::hash_map::Entry::Vacant(v) = first.entry(rf) {
            v.insert(i);
            rows[i].finish = true;
        }
    }
    Ok(())
}

/// Scan Codex rollouts (see `transcripts::scan_files`): `fallbacks` are each file's session
/// id for when its session_meta names none.
pub fn scan_codex_files(
    paths: &[std::path::PathBuf],
    fallbacks: &[Vec<u8>],
    sources: &[Vec<u8>],
    threads: usize,
) -> CcFiles {
    scan_files(paths, fallbacks, sources, threads, scan)
}

/// Scan one rollout's bytes (None: the reference must read it).
pub fn scan_codex(file: &[u8], fallback: &[u8]) -> Option<CcOut> {
    scan(file, fallback, b"").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(c: &crate::cols::StrCol) -> Vec<Option<String>> {
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

    const ROLLOUT: &str = concat!(
        r#"{"timestamp":"t0","type":"session_meta","payload":{"id":"s","cwd":"/w"}}"#,
        "\n",
        r#"{"timestamp":"t1","type":"event_msg","payload":{"type":"task_started","turn_id":"u1"}}"#,
        "\n",
        r#"{"timestamp":"t2","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
        "\n",
        r#"{"timestamp":"t3","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"b\":1,\"a\":2}","call_id":"c1"}}"#,
        "\n",
        r#"{"timestamp":"t4","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":10,"output_tokens":2},"total_token_usage":{"t":1}}}}"#,
        "\n",
        r#"{"timestamp":"t5","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"ok\",\"metadata\":{\"exit_code\":1}}"}}"#,
        "\n",
        r#"{"timestamp":"t6","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"done"}}"#,
        "\n",
    );

    #[test]
    fn maps_a_rollout_as_the_reference() {
        let out = scan_codex(ROLLOUT.as_bytes(), b"f").unwrap();
        assert_eq!(out.runs.len(), 1);
        assert_eq!(out.runs[0].run_id, b"s");
        assert_eq!(out.runs[0].rows, 8);
        assert_eq!(out.runs[0].attrs[0].1, br#"{"cwd":"/w","id":"s"}"#);
        let big = ROLLOUT.replacen(r#""cwd":"/w""#, r#""cwd":"/w","instructions":"long""#, 1);
        let out2 = scan_codex(big.as_bytes(), b"f").unwrap();
        assert_eq!(out2.runs[0].attrs[0].1, br#"{"cwd":"/w","id":"s"}"#);
        assert_eq!(out.line, vec![1, 2, 3, 4, 4, 5, 6, 7]);
        assert_eq!(out.seq, (0..8).collect::<Vec<i64>>());
        assert_eq!(
            strs(&out.kind),
            [
                "session",
                "turn_start",
                "user_message",
                "model_response",
                "tool_call",
                "other",
                "tool_result",
                "turn_end"
            ]
            .map(|s| Some(s.to_string()))
        );
        // the count's tokens moved onto the call's own row; the count row becomes other
        assert_eq!(out.input_tokens.get(3), Some(10));
        assert_eq!(out.output_tokens.get(3), Some(2));
        assert_eq!(out.input_tokens.get(5), None);
        assert_eq!(strs(&out.finish)[3].as_deref(), Some("unknown"));
        assert_eq!(strs(&out.ref_id)[3].as_deref(), Some("s:1.1"));
        assert_eq!(strs(&out.text)[4].as_deref(), Some(r#"{"a":2,"b":1}"#));
        assert_eq!(strs(&out.text)[6].as_deref(), Some("ok"));
        assert_eq!(strs(&out.tool_name)[6].as_deref(), Some("shell"));
        assert_eq!(out.is_error.values.bytes[0] & (1 << 6), 1 << 6);
        assert!(strs(&out.payload)[3]
            .as_deref()
            .unwrap()
            .contains(r#""contentPart":"call""#));
        assert_eq!(strs(&out.typ)[1].as_deref(), Some("event_msg.task_started"));
    }

    #[test]
    fn mid_2025_layout_and_leading_counts() {
        let legacy = concat!(
            r#"{"id":"s","timestamp":"t","instructions":null}"#,
            "\n",
            r#"{"record_type":"state"}"#,
            "\n",
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}"#,
            "\n"
        );
        let out = scan_codex(legacy.as_bytes(), b"f").unwrap();
        assert_eq!(
            strs(&out.typ),
            ["session_meta", "state", "response_item.message"].map(|s| Some(s.to_string()))
        );
        assert_eq!(strs(&out.ts)[1], None);
        // Codex 0.40: the count comes before the call it reports
        let leading = concat!(
            r#"{"type":"session_meta","payload":{"id":"s"}}"#,
            "\n",
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5}}}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"reasoning","summary":[{"text":"a"},{"text":"b"}]}}"#,
            "\n"
        );
        let out = scan_codex(leading.as_bytes(), b"f").unwrap();
        assert_eq!(strs(&out.ref_id)[1].as_deref(), Some("s:0.1"));
        assert_eq!(out.input_tokens.get(1), None);
        assert_eq!(out.input_tokens.get(2), Some(5));
        assert_eq!(strs(&out.text)[2].as_deref(), Some("a\n\nb"));
    }

    #[test]
    fn what_json_loads_surely_refuses() {
        // (called on text the strict tree refused)
        for sure_not in [
            "",
            "  ",
            "[REDACTED x]",
            "{bad",
            "*** Begin",
            "{\"a\":1} x",
            "[1,]",
        ] {
            assert!(py_json_fails(sure_not.as_bytes()), "{sure_not}");
        }
        let deep = "[".repeat(201);
        for maybe in [
            "NaN",
            "-Infinity",
            "{\"a\": NaN}",
            "[\"\\ud800\"]",
            "1e400",
            "[2E9",
            &deep,
        ] {
            assert!(!py_json_fails(maybe.as_bytes()), "{maybe}");
        }
        assert!(!py_json_fails("9".repeat(300).as_bytes()));
    }

    #[test]
    fn refuses_what_the_reference_quarantines_or_is_unsure_of() {
        for bad in [
            "{\"type\":\"event_msg\"}\nnot json\n",
            "[1]\n",
            "{\"payload\":{}}\n",
            "{\"type\":\"x\",\"payload\":[1]}\n",
            "{\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"last_token_usage\":{\"input_tokens\":-1}}}}\n",
            "{\"type\":\"event_msg\",\"payload\":{\"type\":\"task_started\",\"turn_id\":5}}\n",
            "{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"arguments\":\"NaN\"}}\n",
            "{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"output\":\"{\\\"a\\\":NaN}\"}}\n",
            "{\"type\":\"response_item\",\"payload\":{\"type\":[1]}}\n",
        ] {
            assert!(scan_codex(bad.as_bytes(), b"f").is_none(), "{bad}");
        }
        assert_eq!(scan_codex(b"\n\n", b"f").unwrap().runs.len(), 0);
    }
}
