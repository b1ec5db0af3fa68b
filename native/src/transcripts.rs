//! The Claude Code transcript scanner (`replaykit.io.claude_code`, its native path): one
//! file's rows as the reference (`_file_rows` / `_line_rows`) makes them, column by column.
//!
//! The mapping is the reference's, line for line: one row per line, or one per content block
//! (the payload then holds the line with only that block and `contentIndex`); a model call is
//! one assistant `message.id` whose tokens (the last line's usage; `input_tokens` with the
//! cache reads and writes added) and finish go on its first row; a turn starts at each prompt
//! the user typed; runs are sessions and sidechains (`<session>/agent-<agentId>`).
//!
//! It decides only files the reference reads without a single quarantine row and without any
//! shape it is not sure about: a line that is not a strict JSON object, has no string type,
//! a message or content of the wrong type, a token count that is not a non-negative 64-bit
//! integer, an id or timestamp that is not a string, a tool input given as a string, ... make
//! it return `None`, and the caller reads the whole file with the reference code (which
//! quarantines or maps those lines itself). The results are therefore the same by
//! construction; the differential tests (`tests/io/test_native_transcripts.py`) check it.

use std::collections::{HashMap, HashSet};

use crate::cols::{BoolCol, I64Col, StrCol};
use crate::json::{parse_i64, Bail, R};
use crate::lines::{hash32, objects, py_lstrip, str_of, truthy, write, write_over, Over, V};

/// One run (session or sidechain) of a file, in the order the file first names it.
pub struct RunHead {
    pub run_id: Vec<u8>,
    pub parent: Option<Vec<u8>>,
    /// the first string `timestamp` of the run's lines
    pub created_at: Option<Vec<u8>>,
    /// `version`, `cwd`, ...: the first string value of each, in the order first seen
    pub attrs: Vec<(&'static str, Vec<u8>)>,
    /// rows of the run in this file (the next file's seq continues from here)
    pub rows: i64,
}

/// A scanned file: its rows in the reference's order, and its runs.
pub struct CcOut {
    pub runs: Vec<RunHead>,
    /// index into `runs` of each row
    pub run: Vec<i64>,
    pub run_id: StrCol,
    pub parent_run_id: StrCol,
    /// `claude_code:<path>` of the row's file
    pub source: StrCol,
    /// seq within the run, counted in this file
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
    pub chunk_type: StrCol,
    pub text: StrCol,
    pub payload: StrCol,
}

impl CcOut {
    pub(crate) fn new(rows: usize, bytes: usize) -> Self {
        let s = || StrCol::new(false, rows, rows * 8);
        CcOut {
            runs: Vec::new(),
            run: Vec::with_capacity(rows),
            run_id: s(),
            parent_run_id: s(),
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
            chunk_type: s(),
            text: StrCol::new(true, rows, bytes / 2),
            payload: StrCol::new(true, rows, bytes + bytes / 4),
        }
    }

    /// Rows made.
    pub fn len(&self) -> usize {
        self.run.len()
    }

    pub fn is_empty(&self) -> bool {
        self.run.is_empty()
    }

    /// Append another file's rows (its run indexes shifted past this one's runs).
    fn append(&mut self, o: CcOut) {
        let base = self.runs.len() as i64;
        self.runs.extend(o.runs);
        self.run.extend(o.run.iter().map(|r| r + base));
        self.seq.extend_from_slice(&o.seq);
        self.line.extend_from_slice(&o.line);
        for (a, b) in [
            (&mut self.run_id, &o.run_id),
            (&mut self.parent_run_id, &o.parent_run_id),
            (&mut self.source, &o.source),
            (&mut self.typ, &o.typ),
            (&mut self.kind, &o.kind),
            (&mut self.ts, &o.ts),
            (&mut self.event_id, &o.event_id),
            (&mut self.ref_id, &o.ref_id),
            (&mut self.tool_name, &o.tool_name),
            (&mut self.args_hash, &o.args_hash),
            (&mut self.finish, &o.finish),
            (&mut self.chunk_type, &o.chunk_type),
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

    pub(crate) fn overflows(&self) -> bool {
        [
            &self.run_id,
            &self.parent_run_id,
            &self.source,
            &self.typ,
            &self.kind,
            &self.ts,
            &self.event_id,
            &self.ref_id,
            &self.tool_name,
            &self.args_hash,
            &self.finish,
            &self.chunk_type,
        ]
        .iter()
        .any(|c| c.overflows())
    }
}

/// Anthropic `stop_reason` -> replaykit `finish` (the reference's `FINISH`).
fn finish_of(stop: &[u8]) -> &[u8] {
    match stop {
        b"end_turn" | b"stop_sequence" => b"stop",
        b"tool_use" => b"tool-calls",
        b"max_tokens" => b"max-tokens",
        b"refusal" => b"content-filter",
        b"pause_turn" => b"pause",
        other => other,
    }
}

/// The canonical kind of a line type with no mapping of its own (`LINE_TYPES`, else other).
fn line_kind(t: &[u8]) -> &'static [u8] {
    match t {
        b"user" => b"user_message",
        b"assistant" => b"model_response",
        b"summary" => b"checkpoint",
        _ => b"other",
    }
}

const ATTR_KEYS: [&str; 6] = [
    "version",
    "cwd",
    "gitBranch",
    "slug",
    "agentId",
    "permissionMode",
];
const INTERRUPT: &[u8] = b"[Request interrupted";
const COMMAND_OUTPUT: [&[u8]; 4] = [
    b"<local-command-stdout>",
    b"<local-command-stderr>",
    b"<bash-stdout>",
    b"<bash-stderr>",
];

#[derive(Default)]
struct St {
    turn: i64,
    step: i64,
    seq: i64,
    calls: HashMap<Vec<u8>, i64>,
    tools: HashMap<Option<Vec<u8>>, Option<Vec<u8>>>,
    used: HashSet<Vec<u8>>,
}

/// The text of content parts (`text_of` of a list): strings as is, a part's `text` (or, when
/// that is null or absent, its string `thinking`), joined.
fn text_of_items<'v>(items: impl Iterator<Item = &'v V<'v>>, out: &mut Vec<u8>) {
    for p in items {
        match p {
            V::Str(s) => out.extend_from_slice(s),
            V::Obj(_) => {
                let t = match p.get(b"text") {
                    None | Some(V::Null) => str_of(p.get(b"thinking")),
                    Some(V::Str(s)) => Some(&s[..]),
                    _ => None,
                };
                if let Some(t) = t {
                    out.extend_from_slice(t);
                }
            }
            _ => {}
        }
    }
}

/// `text_of(content)` of any value.
pub(crate) fn text_of(v: Option<&V<'_>>) -> Option<Vec<u8>> {
    match v {
        None | Some(V::Null) => None,
        Some(V::Str(s)) => Some(s.to_vec()),
        Some(V::Arr(items)) => {
            let mut out = Vec::new();
            // (the items borrow from the same tree: re-borrowed with its lifetime)
            for p in items {
                text_of_items(std::iter::once(p), &mut out);
            }
            Some(out)
        }
        Some(o @ V::Obj(_)) => match o.get(b"text") {
            Some(V::Str(s)) => Some(s.to_vec()),
            _ => {
                let mut out = Vec::new();
                write(o, &mut out);
                Some(out)
            }
        },
        Some(other) => {
            let mut out = Vec::new();
            write(other, &mut out);
            Some(out)
        }
    }
}

/// A token count: None when absent or null, a non-negative 64-bit integer, else bail (the
/// reference quarantines `bad_tokens`, or the value is a float it converts).
pub(crate) fn tokens(v: Option<&V<'_>>) -> R<Option<i64>> {
    match v {
        None | Some(V::Null) => Ok(None),
        Some(V::Int(t)) => match parse_i64(t) {
            Some(n) if n >= 0 => Ok(Some(n)),
            _ => Err(Bail),
        },
        _ => Err(Bail),
    }
}

/// A member that must be a string or null/absent (anything else: bail).
fn opt_str<'v>(v: Option<&'v V<'_>>) -> R<Option<&'v [u8]>> {
    match v {
        None | Some(V::Null) => Ok(None),
        Some(V::Str(s)) => Ok(Some(s)),
        _ => Err(Bail),
    }
}

/// What a row's payload is: the line, or the line with only content block `i` (and
/// `contentPart: "call"` for a call's own row).
#[derive(Clone, Copy)]
enum Pay {
    Doc,
    One(usize),
    Call(usize),
}

#[derive(Default)]
struct Cols {
    ref_id: Option<Vec<u8>>,
    tool_name: Option<Vec<u8>>,
    args_hash: Option<[u8; 32]>,
    is_error: bool,
    finish: Option<Vec<u8>>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    chunk_type: Option<&'static [u8]>,
    text: Option<Vec<u8>>,
}

struct Line<'v, 'a> {
    source: &'v [u8],
    no: usize,
    run: usize,
    doc: &'v V<'a>,
    msg: Option<&'v V<'a>>,
    blocks: Vec<&'v V<'a>>,
    typ: &'v [u8],
    ts: Option<&'v [u8]>,
    uuid: Option<&'v [u8]>,
    made: usize,
}

pub(crate) fn push_opt(c: &mut StrCol, v: Option<&[u8]>) {
    match v {
        Some(s) => c.push(s),
        None => c.push_null(),
    }
}

fn add(out: &mut CcOut, st: &mut St, ln: &mut Line<'_, '_>, kind: &[u8], pay: Pay, c: Cols) {
    out.run.push(ln.run as i64);
    let head = &out.runs[ln.run];
    out.run_id.push(&head.run_id);
    match &head.parent {
        Some(p) => out.parent_run_id.push(p),
        None => out.parent_run_id.push_null(),
    }
    out.source.push(ln.source);
    out.seq.push(st.seq);
    st.seq += 1;
    out.line.push(ln.no as i64);
    out.typ.push(ln.typ);
    out.kind.push(kind);
    push_opt(&mut out.ts, ln.ts);
    out.turn.push((st.turn != 0).then_some(st.turn));
    out.step.push((st.step != 0).then_some(st.step));
    match ln.uuid {
        Some(u) if ln.made > 0 => {
            out.event_id.data.extend_from_slice(u);
            out.event_id.data.push(b'#');
            out.event_id
                .data
                .extend_from_slice(ln.made.to_string().as_bytes());
            out.event_id.commit();
        }
        other => push_opt(&mut out.event_id, other),
    }
    ln.made += 1;
    push_opt(&mut out.ref_id, c.ref_id.as_deref());
    push_opt(&mut out.tool_name, c.tool_name.as_deref());
    push_opt(&mut out.args_hash, c.args_hash.as_ref().map(|h| &h[..]));
    out.is_error.push(c.is_error);
    push_opt(&mut out.finish, c.finish.as_deref());
    out.input_tokens.push(c.input_tokens);
    out.output_tokens.push(c.output_tokens);
    push_opt(&mut out.chunk_type, c.chunk_type);
    push_opt(&mut out.text, c.text.as_deref());
    // the payload: the line, or the line with only block i (`one(i)`)
    let p = &mut out.payload.data;
    let many = ln.blocks.len() > 1;
    match pay {
        Pay::Doc => write(ln.doc, p),
        Pay::One(_) if !many => write(ln.doc, p),
        Pay::Call(_) if !many => write_over(ln.doc, &[(b"contentPart", Over::Word(b"call"))], p),
        Pay::One(i) | Pay::Call(i) => {
            let msg = Over::Obj(
                ln.msg.unwrap_or(&V::Null),
                vec![(&b"content"[..], Over::One(ln.blocks[i]))],
            );
            if matches!(pay, Pay::Call(_)) {
                write_over(
                    ln.doc,
                    &[
                        (b"contentIndex", Over::Int(i)),
                        (b"contentPart", Over::Word(b"call")),
                        (b"message", msg),
                    ],
                    p,
                )
            } else {
                write_over(
                    ln.doc,
                    &[(b"contentIndex", Over::Int(i)), (b"message", msg)],
                    p,
                )
            }
        }
    }
    out.payload.commit();
}

/// Every prompt token the call read (`_input_tokens`): input + cache reads + cache writes;
/// None when `input_tokens` is not recorded.
fn input_tokens(usage: &V<'_>) -> R<Option<i64>> {
    let a = tokens(usage.get(b"input_tokens"))?;
    let b = tokens(usage.get(b"cache_read_input_tokens"))?;
    let c = tokens(usage.get(b"cache_creation_input_tokens"))?;
    let Some(a) = a else { return Ok(None) };
    a.checked_add(b.unwrap_or(0))
        .and_then(|x| x.checked_add(c.unwrap_or(0)))
        .map(Some)
        .ok_or(Bail)
}

/// Scan one Claude Code transcript (its bytes; `stem`: the file name without its suffix, the
/// run of lines naming no session). None: the reference must read the file.
pub fn scan_claude_code(file: &[u8], stem: &[u8]) -> Option<CcOut> {
    scan(file, stem, b"").ok()
}

/// Many transcripts, read from disk and scanned on up to `threads` threads: their rows in
/// file order (the files the reference must read contribute none), with each file's
/// row range and runs.
pub struct CcFiles {
    pub out: CcOut,
    /// per file: read natively
    pub ok: Vec<bool>,
    /// per file: its first row, and its first run in `out.runs` (n + 1 entries each)
    pub row_start: Vec<i64>,
    pub run_start: Vec<i64>,
}

/// Scan the files at `paths` (`stems`: their names without the suffix; `sources`: the
/// `source` column of each). A file that cannot be read, or that the scanner refuses, is
/// marked not ok (the caller reads it with the reference).
pub fn scan_claude_code_files(
    paths: &[std::path::PathBuf],
    stems: &[Vec<u8>],
    sources: &[Vec<u8>],
    threads: usize,
) -> CcFiles {
    scan_files(paths, stems, sources, threads, scan)
}

/// A format's mapping of one file: `(bytes, stem or fallback id, source)` to its rows.
pub type FileScan = fn(&[u8], &[u8], &[u8]) -> R<CcOut>;

/// The file driver every JSON-lines transcript format shares (Claude Code here, Codex in
/// `codex.rs`): read each file, map it with `scan(bytes, stem, source)` (Err: the reference
/// reads that file), on up to `threads` threads in contiguous groups of about equal size,
/// and join the rows in file order.
pub fn scan_files(
    paths: &[std::path::PathBuf],
    stems: &[Vec<u8>],
    sources: &[Vec<u8>],
    threads: usize,
    scan: FileScan,
) -> CcFiles {
    let n = paths.len();
    let one = |i: usize| -> Option<CcOut> {
        let data = std::fs::read(&paths[i]).ok()?;
        scan(&data, &stems[i], &sources[i]).ok()
    };
    let t = threads.clamp(1, 16).min(n.max(1));
    let parts: Vec<Option<CcOut>> = if t <= 1 {
        (0..n).map(one).collect()
    } else {
        // contiguous groups of files of about equal size on each thread
        let sizes: Vec<u64> = paths
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .collect();
        let total: u64 = sizes.iter().sum::<u64>().max(1);
        let mut cuts = vec![0usize];
        let mut acc = 0u64;
        for (i, s) in sizes.iter().enumerate() {
            acc += s;
            if acc * t as u64 >= total * cuts.len() as u64 && cuts.len() < t && i + 1 < n {
                cuts.push(i + 1);
            }
        }
        cuts.push(n);
        let one = &one;
        std::thread::scope(|sc| {
            let handles: Vec<_> = cuts
                .windows(2)
                .map(|w| {
                    let (a, b) = (w[0], w[1]);
                    (b - a, sc.spawn(move || (a..b).map(one).collect::<Vec<_>>()))
                })
                .collect();
            // a thread that panicked gives no rows: the reference reads its files
            handles
                .into_iter()
                .flat_map(|(m, h)| h.join().unwrap_or_else(|_| (0..m).map(|_| None).collect()))
                .collect()
        })
    };
    let mut out = CcOut::new(0, 0);
    let mut ok = Vec::with_capacity(n);
    let mut row_start = vec![0i64];
    let mut run_start = vec![0i64];
    for p in parts {
        ok.push(p.is_some());
        if let Some(p) = p {
            out.append(p);
        }
        row_start.push(out.len() as i64);
        run_start.push(out.runs.len() as i64);
    }
    if out.overflows() {
        // beyond 32-bit offsets: the reference reads every file
        return CcFiles {
            out: CcOut::new(0, 0),
            ok: vec![false; n],
            row_start: vec![0; n + 1],
            run_start: vec![0; n + 1],
        };
    }
    CcFiles {
        out,
        ok,
        row_start,
        run_start,
    }
}

fn scan(file: &[u8], stem: &[u8], source: &[u8]) -> R<CcOut> {
    let docs = objects(file).ok_or(Bail)?;
    let mut out = CcOut::new(docs.len() + docs.len() / 2, file.len());
    // the file's session, for lines that name none
    let default_session: Option<&[u8]> = docs.iter().find_map(|(_, d)| match d.get(b"sessionId") {
        Some(V::Str(s)) if !s.is_empty() => Some(&s[..]),
        _ => None,
    });
    // each assistant message's last usage and stop reason
    let mut last_usage: HashMap<&[u8], &V<'_>> = HashMap::new();
    let mut last_stop: HashMap<&[u8], &[u8]> = HashMap::new();
    for (_, d) in &docs {
        if str_of(d.get(b"type")) != Some(b"assistant") {
            continue;
        }
        if let Some(m @ V::Obj(_)) = d.get(b"message") {
            if let Some(id) = str_of(m.get(b"id")) {
                if let Some(u @ V::Obj(_)) = m.get(b"usage") {
                    last_usage.insert(id, u);
                }
                if let Some(s) = str_of(m.get(b"stop_reason")) {
                    last_stop.insert(id, s);
                }
            }
        }
    }
    let mut run_index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut states: Vec<St> = Vec::new();
    for (no, doc) in &docs {
        let no = *no;
        let typ = match doc.get(b"type") {
            Some(V::Str(t)) if !t.is_empty() => &t[..],
            _ => return Err(Bail), // missing_type
        };
        // ids and times the reference keeps only as strings: anything else is not ours
        let uuid = opt_str(doc.get(b"uuid"))?;
        let ts = opt_str(doc.get(b"timestamp"))?;
        opt_str(doc.get(b"requestId"))?;
        // the run
        let session = match doc.get(b"sessionId") {
            Some(V::Str(s)) if !s.is_empty() => &s[..],
            _ => default_session.unwrap_or(stem),
        };
        let (run_id, parent): (Vec<u8>, Option<&[u8]>) =
            if matches!(doc.get(b"isSidechain"), Some(V::True)) {
                let agent = match doc.get(b"agentId") {
                    Some(V::Str(a)) if !a.is_empty() => &a[..],
                    _ => stem.strip_prefix(b"agent-").unwrap_or(stem),
                };
                let mut r = session.to_vec();
                r.extend_from_slice(b"/agent-");
                r.extend_from_slice(agent);
                (r, Some(session))
            } else {
                (session.to_vec(), None)
            };
        let run = match run_index.get(&run_id) {
            Some(&k) => k,
            None => {
                let k = out.runs.len();
                run_index.insert(run_id.clone(), k);
                out.runs.push(RunHead {
                    run_id,
                    parent: parent.map(|p| p.to_vec()),
                    created_at: ts.map(|t| t.to_vec()),
                    attrs: Vec::new(),
                    rows: 0,
                });
                states.push(St::default());
                k
            }
        };
        {
            let head = &mut out.runs[run];
            for key in ATTR_KEYS {
                if let Some(v) = str_of(doc.get(key.as_bytes())) {
                    if !head.attrs.iter().any(|(k, _)| *k == key) {
                        head.attrs.push((key, v.to_vec()));
                    }
                }
            }
            if head.created_at.is_none() {
                head.created_at = ts.map(|t| t.to_vec());
            }
        }
        let is_msg_line = typ == b"user" || typ == b"assistant";
        let msg = doc.get(b"message");
        let mut blocks: Vec<&V<'_>> = Vec::new();
        if is_msg_line {
            match msg {
                None | Some(V::Null) | Some(V::Obj(_)) => {}
                _ => return Err(Bail), // bad_message
            }
            match msg.and_then(|m| m.get(b"content")) {
                None | Some(V::Null) => {}
                Some(s @ V::Str(_)) => blocks.push(s),
                Some(V::Arr(items)) => blocks.extend(items.iter()),
                _ => return Err(Bail), // bad_content
            }
        }
        let st = &mut states[run];
        let mut ln = Line {
            source,
            no,
            run,
            doc,
            msg,
            blocks,
            typ,
            ts,
            uuid,
            made: 0,
        };
        match typ {
            b"user" => user_rows(&mut out, st, &mut ln),
            b"assistant" => assistant_rows(&mut out, st, &mut ln, &last_usage, &last_stop)?,
            b"summary" => {
                let c = Cols {
                    ref_id: str_of(doc.get(b"leafUuid")).map(|s| s.to_vec()),
                    text: str_of(doc.get(b"summary")).map(|s| s.to_vec()),
                    ..Cols::default()
                };
                add(&mut out, st, &mut ln, b"checkpoint", Pay::Doc, c);
            }
            b"system" => {
                let kind: &[u8] = if matches!(doc.get(b"subtype"), Some(V::Str(s)) if &s[..] == b"compact_boundary")
                {
                    b"checkpoint"
                } else if matches!(doc.get(b"level"), Some(V::Str(s)) if &s[..] == b"error") {
                    b"error"
                } else {
                    b"other"
                };
                let c = Cols {
                    is_error: kind == b"error",
                    text: str_of(doc.get(b"content")).map(|s| s.to_vec()),
                    ..Cols::default()
                };
                add(&mut out, st, &mut ln, kind, Pay::Doc, c);
            }
            other => {
                let kind = line_kind(other);
                add(&mut out, st, &mut ln, kind, Pay::Doc, Cols::default());
            }
        }
    }
    for (head, st) in out.runs.iter_mut().zip(&states) {
        head.rows = st.seq;
    }
    if out.overflows() {
        return Err(Bail);
    }
    Ok(out)
}

/// A user line the person typed (`_is_prompt`).
fn is_prompt(ln: &Line<'_, '_>) -> bool {
    let d = ln.doc;
    if truthy(d.get(b"isMeta"))
        || truthy(d.get(b"isCompactSummary"))
        || truthy(d.get(b"isVisibleInTranscriptOnly"))
    {
        return false;
    }
    if ln
        .blocks
        .iter()
        .any(|b| matches!(b.get(b"type"), Some(V::Str(t)) if &t[..] == b"tool_result"))
    {
        return false;
    }
    let mut text = Vec::new();
    text_of_items(ln.blocks.iter().copied(), &mut text);
    let t = py_lstrip(&text);
    !(t.starts_with(INTERRUPT) || COMMAND_OUTPUT.iter().any(|c| t.starts_with(c)))
}

fn user_rows(out: &mut CcOut, st: &mut St, ln: &mut Line<'_, '_>) {
    if is_prompt(ln) {
        st.turn += 1;
        st.step = 0;
    }
    if ln.blocks.is_empty() {
        add(out, st, ln, b"user_message", Pay::Doc, Cols::default());
    }
    let compact = truthy(ln.doc.get(b"isCompactSummary"));
    for i in 0..ln.blocks.len() {
        let b = ln.blocks[i];
        if matches!(b.get(b"type"), Some(V::Str(t)) if &t[..] == b"tool_result") {
            let r = str_of(b.get(b"tool_use_id")).map(|s| s.to_vec());
            let name = st.tools.get(&r).cloned().flatten();
            let c = Cols {
                ref_id: r,
                tool_name: name,
                is_error: matches!(b.get(b"is_error"), Some(V::True)),
                text: text_of(b.get(b"content")),
                ..Cols::default()
            };
            add(out, st, ln, b"tool_result", Pay::One(i), c);
        } else {
            let mut text = Vec::new();
            text_of_items(std::iter::once(b), &mut text);
            let (kind, err): (&[u8], bool) = if compact {
                (b"checkpoint", false)
            } else if text.starts_with(INTERRUPT) {
                (b"turn_end", true)
            } else {
                (b"user_message", false)
            };
            let c = Cols {
                is_error: err,
                text: Some(text),
                ..Cols::default()
            };
            add(out, st, ln, kind, Pay::One(i), c);
        }
    }
}

fn assistant_rows(
    out: &mut CcOut,
    st: &mut St,
    ln: &mut Line<'_, '_>,
    last_usage: &HashMap<&[u8], &V<'_>>,
    last_stop: &HashMap<&[u8], &[u8]>,
) -> R<()> {
    let doc = ln.doc;
    let msg = ln.msg;
    let mid = match msg.and_then(|m| m.get(b"id")) {
        None | Some(V::Null) => None,
        Some(V::Str(s)) if !s.is_empty() => Some(&s[..]),
        _ => return Err(Bail), // an empty or non-string id: not ours
    };
    let r: Vec<u8> = match mid {
        Some(m) => m.to_vec(),
        None => match (str_of(doc.get(b"requestId")), ln.uuid) {
            (Some(q), _) if !q.is_empty() => q.to_vec(),
            (_, Some(u)) if !u.is_empty() => u.to_vec(),
            _ => format!("line{}", ln.no).into_bytes(),
        },
    };
    if !st.calls.contains_key(&r) {
        st.step += 1;
        st.calls.insert(r.clone(), st.step);
    }
    let (stop, usage): (Option<&[u8]>, Option<&V<'_>>) = match mid {
        Some(m) => (last_stop.get(m).copied(), last_usage.get(m).copied()),
        None => (
            str_of(msg.and_then(|m| m.get(b"stop_reason"))),
            msg.and_then(|m| m.get(b"usage")),
        ),
    };
    let first = !st.used.contains(&r);
    let finish: Option<Vec<u8>> = if first {
        Some(stop.map_or(b"unknown".to_vec(), |s| finish_of(s).to_vec()))
    } else {
        None
    };
    st.used.insert(r.clone());
    let mut toks = (None, None);
    if first {
        if let Some(u @ V::Obj(_)) = usage {
            toks = (input_tokens(u)?, tokens(u.get(b"output_tokens"))?);
        }
    }
    let err = matches!(doc.get(b"isApiErrorMessage"), Some(V::True))
        || !matches!(doc.get(b"error"), None | Some(V::Null));
    if ln.blocks.is_empty() {
        let c = Cols {
            ref_id: Some(r.clone()),
            finish: if err {
                Some(b"error".to_vec())
            } else {
                finish.clone()
            },
            is_error: err,
            input_tokens: toks.0,
            output_tokens: toks.1,
            ..Cols::default()
        };
        add(out, st, ln, b"model_response", Pay::Doc, c);
    }
    for i in 0..ln.blocks.len() {
        let b = ln.blocks[i];
        let (it, ot) = if i == 0 { toks } else { (None, None) };
        let btype: Option<&[u8]> = match b {
            V::Obj(_) => match b.get(b"type") {
                None | Some(V::Null) => None,
                Some(V::Str(s)) => Some(&s[..]),
                _ => return Err(Bail),
            },
            _ => Some(b"text"),
        };
        match btype {
            Some(b"tool_use") => {
                let tid = str_of(b.get(b"id")).map(|s| s.to_vec());
                let name = str_of(b.get(b"name")).map(|s| s.to_vec());
                st.tools.insert(tid.clone(), name.clone());
                if i == 0 && first {
                    let c = Cols {
                        ref_id: Some(r.clone()),
                        finish: finish.clone(),
                        is_error: err,
                        input_tokens: it,
                        output_tokens: ot,
                        ..Cols::default()
                    };
                    add(out, st, ln, b"model_response", Pay::Call(i), c);
                }
                let mut args = Vec::new();
                match b.get(b"input") {
                    None | Some(V::Null) => args.extend_from_slice(b"{}"),
                    Some(V::Str(_)) => return Err(Bail), // hashed by the JSON it holds
                    Some(v) => write(v, &mut args),
                }
                let c = Cols {
                    ref_id: tid,
                    tool_name: name,
                    args_hash: Some(hash32(&args)),
                    text: Some(args),
                    ..Cols::default()
                };
                add(out, st, ln, b"tool_call", Pay::One(i), c);
            }
            Some(b"thinking" | b"redacted_thinking") => {
                let text = match b {
                    V::Obj(_) => opt_str(b.get(b"thinking"))?.map(|s| s.to_vec()),
                    _ => None,
                };
                let c = Cols {
                    ref_id: Some(r.clone()),
                    chunk_type: Some(b"reasoning"),
                    finish: if i == 0 { finish.clone() } else { None },
                    text,
                    input_tokens: it,
                    output_tokens: ot,
                    ..Cols::default()
                };
                add(out, st, ln, b"model_chunk", Pay::One(i), c);
            }
            _ => {
                let mut text = Vec::new();
                text_of_items(std::iter::once(b), &mut text);
                let c = Cols {
                    ref_id: Some(r.clone()),
                    is_error: err,
                    text: Some(text),
                    finish: if err {
                        Some(b"error".to_vec())
                    } else if i == 0 {
                        finish.clone()
                    } else {
                        None
                    },
                    input_tokens: it,
                    output_tokens: ot,
                    ..Cols::default()
                };
                add(out, st, ln, b"model_response", Pay::One(i), c);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    const SESSION: &str = concat!(
        r#"{"type":"user","sessionId":"s","uuid":"u1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w","message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","sessionId":"s","uuid":"u2","message":{"id":"m1","content":[{"type":"thinking","thinking":"hm"}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        "\n\n",
        r#"{"type":"assistant","sessionId":"s","uuid":"u3","message":{"id":"m1","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"b":1,"a":2}}],"usage":{"input_tokens":3,"cache_read_input_tokens":10,"output_tokens":7}}}"#,
        "\n",
        r#"{"type":"user","sessionId":"s","uuid":"u4","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}]}]}}"#,
        "\n",
        r#"{"type":"summary","summary":"done","leafUuid":"u4"}"#,
        "\n",
    );

    #[test]
    fn maps_a_session_as_the_reference() {
        let out = scan_claude_code(SESSION.as_bytes(), b"file").unwrap();
        assert_eq!(out.runs.len(), 1);
        assert_eq!(out.runs[0].run_id, b"s");
        assert_eq!(out.runs[0].rows, 5);
        assert_eq!(out.line, vec![1, 2, 4, 5, 6]);
        assert_eq!(
            strs(&out.kind),
            [
                "user_message",
                "model_chunk",
                "tool_call",
                "tool_result",
                "checkpoint"
            ]
            .map(|s| Some(s.to_string()))
        );
        // the call's tokens once, on its first row, from the last line's usage
        assert_eq!(out.input_tokens.get(1), Some(13));
        assert_eq!(out.output_tokens.get(1), Some(7));
        assert_eq!(out.input_tokens.get(2), None);
        assert_eq!(strs(&out.finish)[1].as_deref(), Some("tool-calls"));
        assert_eq!(strs(&out.tool_name)[3].as_deref(), Some("Bash"));
        assert_eq!(strs(&out.text)[2].as_deref(), Some(r#"{"a":2,"b":1}"#));
        assert_eq!(strs(&out.text)[3].as_deref(), Some("ok"));
        assert_eq!(out.turn.get(0), Some(1));
        assert_eq!(out.step.get(0), None);
        assert_eq!(out.step.get(2), Some(1));
        assert_eq!(
            strs(&out.payload)[0].as_deref(),
            Some(
                r#"{"cwd":"/w","message":{"content":"hi","role":"user"},"sessionId":"s","timestamp":"2025-01-01T00:00:00Z","type":"user","uuid":"u1"}"#
            )
        );
    }

    #[test]
    fn blocks_split_and_call_rows() {
        let line = r#"{"type":"assistant","sessionId":"s","uuid":"u","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"N","input":{}},{"type":"text","text":"x"}]}}"#;
        let out = scan_claude_code(line.as_bytes(), b"f").unwrap();
        let pay = strs(&out.payload);
        assert_eq!(out.len(), 3);
        assert!(pay[0]
            .as_deref()
            .unwrap()
            .contains(r#""contentIndex":0,"contentPart":"call""#));
        assert!(pay[2].as_deref().unwrap().contains(
            r#""contentIndex":1,"message":{"content":[{"text":"x","type":"text"}],"id":"m"}"#
        ));
        assert_eq!(
            strs(&out.event_id),
            vec![Some("u".into()), Some("u#1".into()), Some("u#2".into())]
        );
    }

    #[test]
    fn bails_on_what_the_reference_quarantines_or_is_unsure_of() {
        for bad in [
            "{\"type\":\"user\"}\nnot json\n",
            "[1]\n",
            "{\"sessionId\":\"s\"}\n",
            "{\"type\":\"user\",\"message\":\"text\"}\n",
            "{\"type\":\"user\",\"message\":{\"content\":5}}\n",
            "{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":-1}}}\n",
            "{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"usage\":{\"output_tokens\":1.0}}}\n",
            "{\"type\":\"user\",\"uuid\":5}\n",
            "{\"type\":\"user\",\"timestamp\":1}\n",
            "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"input\":\"{}\"}]}}\n",
        ] {
            assert!(scan_claude_code(bad.as_bytes(), b"f").is_none(), "{bad}");
        }
        assert!(scan_claude_code(b"{\"type\":\"x\"}\n", b"f").is_some());
        assert_eq!(scan_claude_code(b"\n\n", b"f").unwrap().len(), 0);
    }
}
