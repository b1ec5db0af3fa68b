//! The pleach `harness_event_log` JSONL block scanner.
//!
//! One pass per line: strict JSON validation of the whole line, the envelope's typed fields,
//! the payload's verbatim byte span, the typed payload fields and, from them, the canonical
//! columns that `replaykit.io.pleach._slim` derives (ref/event ids, tool name, finish, tokens,
//! turn, cache key, is_error, the subagent child, tool-call arguments as canonical JSON and
//! their hash, `text`).
//!
//! It reproduces the Python fast path (`_fastpath._fast_block` + `_derive._slim`) exactly on
//! the blocks that path reads column-wise, and refuses (returns `None` for) every block that
//! path would not read, or that it is not sure about: the caller then runs the reference code
//! on that block, which finds and reports the bad rows. The rules it refuses on are listed at
//! [`scan_line`].

use crate::canon;
use crate::cols::{Bits, BoolCol, I64Col, StrCol};
use crate::json::{decoded, is_ws, parse_i64, unescape_into, Bail, Kind, Scanner, Str, R};
use sha2::{Digest, Sha256};

/// A scanned block: the columns of its rows, in line order.
pub struct BlockOut {
    /// newline-terminated lines in the block (blank lines included)
    pub n_lines: usize,
    /// 0-based line of each row within the block
    pub line: Vec<i64>,
    pub tenant_id: StrCol,
    pub chat_id: StrCol,
    pub sequence_number: I64Col,
    pub event_type: StrCol,
    pub prev_hash: StrCol,
    pub row_hash: StrCol,
    /// created_at: text, or epoch milliseconds (one of the two per block)
    pub created_str: Option<StrCol>,
    pub created_int: Option<I64Col>,
    pub payload: StrCol,
    /// the derived columns of the rows
    pub d: Derived,
    /// every row passes the loader's column-wise row checks but the timestamp's (a tenant id
    /// by the tenant-id rule, a non-empty chat_id and event_type, a sequence_number >= 0):
    /// `_checks._check_rows` then skips them
    pub clean: bool,
    /// lean scan ([`scan_block_lean`]): only the columns `replaykit summary` reads were built
    /// (tenant_id, chat_id, sequence_number, event_type, created_at, and of [`Derived`] turn,
    /// is_error, finish, child); the others are empty
    pub lean: bool,
}

/// The columns derived from a row's event type and typed payload fields (the reference's
/// `_derive._canonical_columns` and `_tool_args`, `text`): shared by the block scanner and
/// [`derive_payloads`] (the verifier's re-derivation).
pub struct Derived {
    /// on turn events, null beyond 32 bits (not yet carried forward within the run)
    pub turn: I64Col,
    pub event_id: StrCol,
    pub ref_id: StrCol,
    pub tool_name: StrCol,
    pub args_hash: StrCol,
    pub cache_key: StrCol,
    pub is_error: BoolCol,
    pub finish: StrCol,
    pub input_tokens: I64Col,
    pub output_tokens: I64Col,
    pub child: StrCol,
    pub args: StrCol,
    pub text: StrCol,
    /// rows whose arguments are a JSON string: their hash depends on whether the string
    /// itself parses as JSON, which the reference decides (`args_hash`); null here
    pub py_hash_rows: Vec<i64>,
    /// lean derivation (a lean block scan, [`scan_block_lean`]): only the per-run columns
    /// (turn, is_error, finish, child) are built; the others stay empty
    pub lean: bool,
    /// bytes of the canonical tool-call arguments (a lean scan builds no `args` column, but
    /// refuses the block when that column would overflow, as the full scan does)
    args_bytes: usize,
}

impl Derived {
    /// Empty columns with room for `est` rows (`text_bytes` of text).
    fn new(est: usize, text_bytes: usize) -> Self {
        Derived {
            turn: I64Col::with_capacity(est),
            event_id: StrCol::new(false, est, est * 4),
            ref_id: StrCol::new(false, est, est * 16),
            tool_name: StrCol::new(false, est, est * 4),
            args_hash: StrCol::new(false, est, est * 8),
            cache_key: StrCol::new(false, est, est * 8),
            is_error: BoolCol::default(),
            finish: StrCol::new(false, est, est * 2),
            input_tokens: I64Col::with_capacity(est),
            output_tokens: I64Col::with_capacity(est),
            child: StrCol::new(false, est, 0),
            args: StrCol::new(false, est, est * 16),
            text: StrCol::new(true, est, text_bytes), // (the slack is handed back, see py.rs buf)
            py_hash_rows: Vec::new(),
            lean: false,
            args_bytes: 0,
        }
    }

    /// True when a 32-bit column's offsets would overflow (the caller then declines).
    pub fn overflows(&self) -> bool {
        self.args_bytes > i32::MAX as usize
            || [
                &self.args,
                &self.args_hash,
                &self.event_id,
                &self.ref_id,
                &self.tool_name,
                &self.cache_key,
                &self.finish,
                &self.child,
            ]
            .iter()
            .any(|c| c.overflows())
    }
}

/// The tenant-id rule (`replaykit.tenancy`): 1 to 256 characters, none of them a control
/// character (U+0000-U+001F, U+007F-U+009F) or a line/paragraph separator (U+2028/2029).
pub fn tenant_ok(t: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(t) else {
        return false;
    };
    let mut n = 0usize;
    for c in s.chars() {
        n += 1;
        if n > 256
            || matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}')
        {
            return false;
        }
    }
    n > 0
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ev {
    TurnStarted,
    TurnCompleted,
    MessageUser,
    ModelRequested,
    ModelCompleted,
    ToolCalled,
    ToolCompleted,
    InterruptRaised,
    InterruptResolved,
    SubagentSpawned,
    SubagentCompleted,
    CheckpointCreated,
    ErrorRaised,
    ExportCreated,
    UserCardShown,
    Other,
}

fn event_kind(t: &[u8]) -> Ev {
    match t {
        b"turn.started" => Ev::TurnStarted,
        b"turn.completed" => Ev::TurnCompleted,
        b"message.user" => Ev::MessageUser,
        b"model.requested" => Ev::ModelRequested,
        b"model.completed" => Ev::ModelCompleted,
        b"tool.called" => Ev::ToolCalled,
        b"tool.completed" => Ev::ToolCompleted,
        b"interrupt.raised" => Ev::InterruptRaised,
        b"interrupt.resolved" => Ev::InterruptResolved,
        b"subagent.spawned" => Ev::SubagentSpawned,
        b"subagent.completed" => Ev::SubagentCompleted,
        b"checkpoint.created" => Ev::CheckpointCreated,
        b"error.raised" => Ev::ErrorRaised,
        b"export.created" => Ev::ExportCreated,
        b"user_card.shown" => Ev::UserCardShown,
        _ => Ev::Other,
    }
}

/// A string-or-null field: None = null or absent.
type S = Option<Str>;

#[derive(Default)]
struct Row {
    tenant_id: S,
    chat_id: S,
    sequence_number: Option<i64>,
    event_type: S,
    prev_hash: S,
    row_hash: S,
    created_str: S,
    created_int: Option<i64>,
    payload: Option<(usize, usize)>,
    // typed payload fields (top level of the payload object)
    turn: Option<i64>,
    message_id: S,
    call_id: S,
    tool: S,
    finish: S,
    text: S,
    result: S,
    is_error: Option<bool>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    cache_key: S,
    interrupt_id: S,
    reason: S,
    subagent_id: S,
    child_chat_id: S,
    checkpoint_id: S,
    export_id: S,
    card_id: S,
    message: S,
    /// the span of the (last) `args` member's value
    args: Option<(usize, usize)>,
    /// `usage` was an object (not null or absent)
    usage_obj: bool,
}

/// Bits for "this key was seen" (a typed field given twice is refused, as Arrow's typed parse
/// refuses it).
struct Seen(u64);

impl Seen {
    #[inline]
    fn first(&mut self, bit: u32) -> R<()> {
        if self.0 & (1 << bit) != 0 {
            return Err(Bail);
        }
        self.0 |= 1 << bit;
        Ok(())
    }
}

fn str_or_null(sc: &mut Scanner<'_>) -> R<S> {
    match sc.peek() {
        Some(b'"') => Ok(Some(sc.string()?)),
        Some(b'n') => match sc.value(0)? {
            Kind::Null => Ok(None),
            _ => Err(Bail),
        },
        _ => Err(Bail),
    }
}

fn int_or_null(sc: &mut Scanner<'_>, depth: usize) -> R<Option<i64>> {
    match sc.value(depth)? {
        Kind::Null => Ok(None),
        Kind::Number(n) if n.integer => parse_i64(&sc.s[n.start..n.end]).map(Some).ok_or(Bail),
        _ => Err(Bail),
    }
}

fn bool_or_null(sc: &mut Scanner<'_>) -> R<Option<bool>> {
    match sc.value(0)? {
        Kind::Null => Ok(None),
        Kind::True => Ok(Some(true)),
        Kind::False => Ok(Some(false)),
        _ => Err(Bail),
    }
}

/// A member's key: refused when it holds escapes (a key spelled with `\u` escapes of its
/// letters would be read as another key by some readers; the reference reads such rows).
#[inline]
fn plain_key(sc: &mut Scanner<'_>) -> R<(usize, usize)> {
    let k = sc.string()?;
    if k.escaped {
        return Err(Bail);
    }
    Ok((k.start, k.end))
}

/// `usage`: null, or an object whose `input_tokens` / `output_tokens` are integers or null.
fn usage(sc: &mut Scanner<'_>, row: &mut Row, depth: usize) -> R<()> {
    if sc.peek() == Some(b'n') {
        return match sc.value(depth)? {
            Kind::Null => Ok(()),
            _ => Err(Bail),
        };
    }
    if depth > crate::json::MAX_DEPTH {
        return Err(Bail);
    }
    sc.expect(b'{')?;
    row.usage_obj = true;
    let mut seen = Seen(0);
    sc.skip_ws();
    if sc.peek() == Some(b'}') {
        sc.pos += 1;
        return Ok(());
    }
    loop {
        sc.skip_ws();
        let (ks, ke) = plain_key(sc)?;
        sc.skip_ws();
        sc.expect(b':')?;
        sc.skip_ws();
        match &sc.s[ks..ke] {
            b"input_tokens" => {
                seen.first(0)?;
                row.input_tokens = int_or_null(sc, depth)?;
            }
            b"output_tokens" => {
                seen.first(1)?;
                row.output_tokens = int_or_null(sc, depth)?;
            }
            _ => {
                sc.value(depth)?;
            }
        }
        sc.skip_ws();
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            Some(b'}') => {
                sc.pos += 1;
                return Ok(());
            }
            _ => return Err(Bail),
        }
    }
}

/// The payload object at the cursor (level 2 of the line): its typed fields into `row`.
fn payload(sc: &mut Scanner<'_>, row: &mut Row) -> R<()> {
    const LEVEL: usize = 2;
    sc.expect(b'{')?;
    let mut seen = Seen(0);
    sc.skip_ws();
    if sc.peek() == Some(b'}') {
        sc.pos += 1;
        return Ok(());
    }
    loop {
        sc.skip_ws();
        let (ks, ke) = plain_key(sc)?;
        sc.skip_ws();
        sc.expect(b':')?;
        sc.skip_ws();
        macro_rules! string_field {
            ($bit:expr, $f:ident) => {{
                seen.first($bit)?;
                row.$f = str_or_null(sc)?;
            }};
        }
        match &sc.s[ks..ke] {
            b"turn" => {
                seen.first(0)?;
                row.turn = int_or_null(sc, LEVEL)?;
            }
            b"message_id" => string_field!(1, message_id),
            b"call_id" => string_field!(2, call_id),
            b"tool" => string_field!(3, tool),
            b"finish" => string_field!(4, finish),
            b"text" => string_field!(5, text),
            b"result" => string_field!(6, result),
            b"is_error" => {
                seen.first(7)?;
                row.is_error = bool_or_null(sc)?;
            }
            b"usage" => {
                seen.first(8)?;
                usage(sc, row, LEVEL + 1)?;
            }
            b"cacheKey" => string_field!(9, cache_key),
            b"interrupt_id" => string_field!(10, interrupt_id),
            b"reason" => string_field!(11, reason),
            b"subagent_id" => string_field!(12, subagent_id),
            b"child_chat_id" => string_field!(13, child_chat_id),
            b"checkpoint_id" => string_field!(14, checkpoint_id),
            b"export_id" => string_field!(15, export_id),
            b"card_id" => string_field!(16, card_id),
            b"message" => string_field!(17, message),
            b"args" => {
                let start = sc.pos;
                sc.value(LEVEL)?;
                row.args = Some((start, sc.pos)); // the last one counts (as in a dict)
            }
            _ => {
                sc.value(LEVEL)?;
            }
        }
        sc.skip_ws();
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            Some(b'}') => {
                sc.pos += 1;
                return Ok(());
            }
            _ => return Err(Bail),
        }
    }
}

/// Scan one line (without its line end). Refuses (Bail) when:
/// - the line does not start with `{` or anything follows the object's closing brace;
/// - it is not strict JSON (see `json.rs`), or nests deeper than 200 levels;
/// - a top-level key holds escapes, or an envelope field / typed payload field is given twice
///   (so also a second `tenant_id`: whose row it is would be ambiguous);
/// - an envelope or typed payload field has another JSON type than its column (the reference
///   then reads the block row by row and re-serialises payloads);
/// - `payload` is missing or not an object, or is not the line's first nested object, or a
///   `}` follows it anywhere but at the line's end (the reference's column-wise span rules),
///   or more than 8 whitespace bytes stand around its colon.
fn scan_line(line: &[u8], row: &mut Row) -> R<()> {
    let mut sc = Scanner::new(line);
    sc.expect(b'{')?;
    let mut seen = Seen(0);
    sc.skip_ws();
    if sc.peek() == Some(b'}') {
        return Err(Bail); // no payload
    }
    loop {
        sc.skip_ws();
        let (ks, ke) = plain_key(&mut sc)?;
        let ws1 = sc.skip_ws_count();
        sc.expect(b':')?;
        let ws2 = sc.skip_ws_count();
        match &line[ks..ke] {
            b"tenant_id" => {
                seen.first(0)?;
                row.tenant_id = str_or_null(&mut sc)?;
            }
            b"chat_id" => {
                seen.first(1)?;
                row.chat_id = str_or_null(&mut sc)?;
            }
            b"sequence_number" => {
                seen.first(2)?;
                row.sequence_number = int_or_null(&mut sc, 1)?;
            }
            b"event_type" => {
                seen.first(3)?;
                row.event_type = str_or_null(&mut sc)?;
            }
            b"prev_hash" => {
                seen.first(4)?;
                row.prev_hash = str_or_null(&mut sc)?;
            }
            b"row_hash" => {
                seen.first(5)?;
                row.row_hash = str_or_null(&mut sc)?;
            }
            b"created_at" => {
                seen.first(6)?;
                match sc.value(1)? {
                    Kind::Null => {}
                    Kind::String(s) => row.created_str = Some(s),
                    Kind::Number(n) if n.integer => {
                        row.created_int = Some(parse_i64(&line[n.start..n.end]).ok_or(Bail)?)
                    }
                    _ => return Err(Bail),
                }
            }
            b"payload" => {
                seen.first(7)?;
                if ws1 > 8 || ws2 > 8 || sc.peek() != Some(b'{') {
                    return Err(Bail);
                }
                let start = sc.pos;
                // the payload must be the line's first nested object (no `{` before it)
                if memchr::memchr(b'{', &line[1..start]).is_some() {
                    return Err(Bail);
                }
                payload(&mut sc, row)?;
                row.payload = Some((start, sc.pos));
            }
            _ => {
                sc.value(1)?;
            }
        }
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
    if sc.pos != line.len() {
        return Err(Bail);
    }
    let (_, pend) = row.payload.ok_or(Bail)?;
    // the payload's closing brace must be the line's second-to-last `}`
    if memchr::memchr(b'}', &line[pend..line.len() - 1]).is_some() {
        return Err(Bail);
    }
    Ok(())
}

#[inline]
fn push_s(col: &mut StrCol, line: &[u8], v: S) {
    match v {
        Some(s) => {
            unescape_into(line, s, &mut col.data);
            col.commit();
        }
        None => col.push_null(),
    }
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

/// Scan a block of newline-terminated lines (bytes after the last newline are not read).
/// None: the reference path must read this block.
pub fn scan_block(b: &[u8]) -> Option<BlockOut> {
    scan(b, false)
}

/// [`scan_block`] for `replaykit summary`: every line validated exactly as the full scan
/// validates it, and the same blocks refused (and a few more: a block of 2 GiB or more), but
/// only the per-run columns built (see [`BlockOut::lean`]): no payload, hashes, `text`,
/// arguments or ids.
pub fn scan_block_lean(b: &[u8]) -> Option<BlockOut> {
    if b.len() > i32::MAX as usize {
        return None; // the full scan decides whether a skipped column would overflow
    }
    scan(b, true)
}

fn scan(b: &[u8], lean: bool) -> Option<BlockOut> {
    if std::str::from_utf8(b).is_err() {
        return None;
    }
    let est = b.len() / 400 + 16;
    let mut out = BlockOut {
        n_lines: 0,
        line: Vec::with_capacity(est),
        tenant_id: StrCol::new(false, est, est * 8),
        chat_id: StrCol::new(false, est, est * 16),
        sequence_number: I64Col::with_capacity(est),
        event_type: StrCol::new(false, est, est * 14),
        prev_hash: StrCol::new(false, est, est * 64),
        row_hash: StrCol::new(false, est, est * 64),
        created_str: Some(StrCol::new(false, est, est * 24)),
        created_int: Some(I64Col::with_capacity(est)),
        payload: StrCol::new(true, est, b.len() / 2),
        d: Derived::new(est, b.len() / 4),
        clean: true,
        lean,
    };
    if lean {
        out.d.lean = true;
        for c in [
            &mut out.prev_hash,
            &mut out.row_hash,
            &mut out.payload,
            &mut out.d.event_id,
            &mut out.d.ref_id,
            &mut out.d.tool_name,
            &mut out.d.args_hash,
            &mut out.d.cache_key,
            &mut out.d.args,
            &mut out.d.text,
        ] {
            *c = StrCol::new(false, 0, 0);
        }
        out.d.input_tokens = I64Col::default();
        out.d.output_tokens = I64Col::default();
    }
    let (mut any_str, mut any_int) = (false, false);
    let mut start = 0usize;
    let mut lineno = 0i64;
    for nl in memchr::memchr_iter(b'\n', b) {
        let mut end = nl;
        if end > start && b[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &b[start..end];
        start = nl + 1;
        let this = lineno;
        lineno += 1;
        if line.is_empty() {
            continue; // blank: not a row
        }
        if line[0] != b'{' {
            return None; // whitespace-only lines and non-objects: the reference decides
        }
        let mut row = Row::default();
        if scan_line(line, &mut row).is_err() {
            return None;
        }
        any_str |= row.created_str.is_some();
        any_int |= row.created_int.is_some();
        if any_str && any_int {
            return None; // mixed created_at representations: the reference's row path
        }
        emit(&mut out, line, &row, this)?;
    }
    out.n_lines = lineno as usize;
    if any_int {
        out.created_str = None;
    } else {
        out.created_int = None;
    }
    for c in [
        &out.tenant_id,
        &out.chat_id,
        &out.event_type,
        &out.prev_hash,
        &out.row_hash,
    ] {
        if c.overflows() {
            return None;
        }
    }
    if let Some(c) = &out.created_str {
        if c.overflows() {
            return None;
        }
    }
    if out.d.overflows() {
        return None;
    }
    Some(out)
}

/// One row's columns (the reference's `_canonical_columns` and `_tool_args`); a lean scan
/// builds only the per-run ones (and still checks the tool-call arguments canonicalise).
fn emit(out: &mut BlockOut, line: &[u8], row: &Row, lineno: i64) -> Option<()> {
    let i = out.line.len() as i64;
    let lean = out.lean;
    out.line.push(lineno);
    push_s(&mut out.tenant_id, line, row.tenant_id);
    push_s(&mut out.chat_id, line, row.chat_id);
    out.sequence_number.push(row.sequence_number);
    push_s(&mut out.event_type, line, row.event_type);
    if out.clean {
        out.clean = out.tenant_id.last().is_some_and(tenant_ok)
            && out.chat_id.last().is_some_and(|c| !c.is_empty())
            && out.event_type.last().is_some_and(|e| !e.is_empty())
            && row.sequence_number.is_some_and(|q| q >= 0);
    }
    if !lean {
        push_s(&mut out.prev_hash, line, row.prev_hash);
        push_s(&mut out.row_hash, line, row.row_hash);
    }
    if let Some(c) = out.created_str.as_mut() {
        push_s(c, line, row.created_str);
    }
    if let Some(c) = out.created_int.as_mut() {
        c.push(row.created_int);
    }
    let (ps, pe) = row.payload?;
    if !lean {
        out.payload.push(&line[ps..pe]);
    }
    let ev = match row.event_type {
        Some(s) => event_kind(&decoded(line, s)),
        None => Ev::Other,
    };
    derive(&mut out.d, line, row, ev, i)
}

/// The derived columns of one row (the reference's `_canonical_columns` and `_tool_args`, and
/// `text`): `src` holds the row's spans, `ev` is its event type, `i` its row number. None when
/// the arguments are not canonical JSON the core is sure of (the caller declines the input).
fn derive(out: &mut Derived, src: &[u8], row: &Row, ev: Ev, i: i64) -> Option<()> {
    let line = src;
    let lean = out.lean;
    use Ev::*;
    // turn: on turn events, null beyond 32 bits
    let turn = match ev {
        TurnStarted | TurnCompleted => row.turn.filter(|t| i32::try_from(*t).is_ok()),
        _ => None,
    };
    out.turn.push(turn);
    if !lean {
        push_s(
            &mut out.event_id,
            line,
            match ev {
                MessageUser => row.message_id,
                CheckpointCreated => row.checkpoint_id,
                ExportCreated => row.export_id,
                UserCardShown => row.card_id,
                _ => None,
            },
        );
        push_s(
            &mut out.ref_id,
            line,
            match ev {
                ModelRequested | ModelCompleted | ToolCalled | ToolCompleted => row.call_id,
                InterruptRaised | InterruptResolved => row.interrupt_id,
                SubagentSpawned | SubagentCompleted => row.subagent_id,
                TurnStarted | TurnCompleted => row.message_id,
                _ => None,
            },
        );
        push_s(
            &mut out.tool_name,
            line,
            match ev {
                ToolCalled | ToolCompleted => row.tool,
                _ => None,
            },
        );
    }
    // tool-call arguments: canonical JSON and its hash
    let mut args_text: Option<Vec<u8>> = None;
    if ev == ToolCalled {
        if let Some((s, e)) = row.args {
            let v = &line[s..e];
            if v != b"null" {
                let text = canon::canonical(v).ok()?;
                if lean {
                    out.args_bytes += text.len();
                } else if v[0] == b'"' {
                    out.py_hash_rows.push(i);
                    out.args_hash.push_null();
                } else {
                    let d = Sha256::digest(&text);
                    out.args_hash.push(&hex32(&d));
                }
                args_text = Some(text);
            }
        }
    }
    if !lean {
        if args_text.is_none() {
            out.args_hash.push_null();
        }
        push_s(&mut out.cache_key, line, row.cache_key);
    }
    let finish = if ev == ModelCompleted {
        row.finish
    } else {
        None
    };
    let finish_error = finish
        .map(|f| &*decoded(line, f) == b"error")
        .unwrap_or(false);
    let is_error =
        (ev == ToolCompleted && row.is_error == Some(true)) || ev == ErrorRaised || finish_error;
    out.is_error.push(is_error);
    push_s(&mut out.finish, line, finish);
    let model_done = ev == ModelCompleted;
    if !lean {
        out.input_tokens
            .push(if model_done { row.input_tokens } else { None });
        out.output_tokens
            .push(if model_done { row.output_tokens } else { None });
    }
    push_s(
        &mut out.child,
        line,
        if ev == SubagentSpawned {
            row.child_chat_id
        } else {
            None
        },
    );
    if lean {
        return Some(());
    }
    // text = coalesce(args, text, result, message, reason)
    match &args_text {
        Some(t) => {
            out.args.push(t);
            out.text.push(t);
        }
        None => {
            out.args.push_null();
            let first = [row.text, row.result, row.message, row.reason]
                .into_iter()
                .flatten()
                .next();
            push_s(&mut out.text, line, first);
        }
    }
    Some(())
}

/// The typed payload fields of many payload objects, as Arrow's typed JSON parse of
/// `replaykit.io.pleach._shapes._TYPED` reads them (`_derive._typed_payloads`).
pub struct Typed {
    pub turn: I64Col,
    /// the string fields, in [`TYPED_STRINGS`] order
    pub strings: Vec<StrCol>,
    /// `is_error` as 0/1 (null when absent or null)
    pub is_error: I64Col,
    /// `usage` was an object, per row
    pub usage: Vec<bool>,
    pub input_tokens: I64Col,
    pub output_tokens: I64Col,
}

/// The string fields of [`Typed::strings`], by name.
pub const TYPED_STRINGS: [&str; 15] = [
    "message_id",
    "call_id",
    "tool",
    "finish",
    "text",
    "result",
    "cacheKey",
    "interrupt_id",
    "reason",
    "subagent_id",
    "child_chat_id",
    "checkpoint_id",
    "export_id",
    "card_id",
    "message",
];

/// [`Typed`] of each span `data[offs[i]..offs[i+1]]` (`offs`: n + 1 int64 offsets, see
/// [`crate::hash::map_spans`]), each one payload object with nothing around it. `Ok(None)`
/// when any span is not one the scanner is sure of (not valid UTF-8, not strict JSON, a typed
/// field of another type or given twice, a key with escapes, anything after the object):
/// the caller then runs the reference parse on the whole column. `Err`: bad offsets.
pub fn typed_payloads(offs: &[u8], data: &[u8]) -> Result<Option<Typed>, String> {
    let n = (offs.len() / 8).saturating_sub(1);
    let mut out = Typed {
        turn: I64Col::default(),
        strings: TYPED_STRINGS
            .iter()
            .map(|_| StrCol::new(false, n, 0))
            .collect(),
        is_error: I64Col::default(),
        usage: Vec::with_capacity(n),
        input_tokens: I64Col::default(),
        output_tokens: I64Col::default(),
    };
    let mut sure = true;
    crate::hash::map_spans(offs, data, |p| {
        if !sure {
            return;
        }
        let mut row = Row::default();
        if !read_payload(p, &mut row) {
            sure = false;
            return;
        }
        out.turn.push(row.turn);
        let fields = [
            row.message_id,
            row.call_id,
            row.tool,
            row.finish,
            row.text,
            row.result,
            row.cache_key,
            row.interrupt_id,
            row.reason,
            row.subagent_id,
            row.child_chat_id,
            row.checkpoint_id,
            row.export_id,
            row.card_id,
            row.message,
        ];
        for (col, v) in out.strings.iter_mut().zip(fields) {
            push_s(col, p, v);
        }
        out.is_error.push(row.is_error.map(i64::from));
        out.usage.push(row.usage_obj);
        out.input_tokens.push(row.input_tokens);
        out.output_tokens.push(row.output_tokens);
    })?;
    if !sure || out.strings.iter().any(|c| c.overflows()) {
        return Ok(None);
    }
    Ok(Some(out))
}

/// The event types [`derive_payloads`] tells apart, by code (the index; any other code is
/// another type): the caller maps each row's `type` to its code.
pub const EVENT_TYPES: [&str; 15] = [
    "turn.started",
    "turn.completed",
    "message.user",
    "model.requested",
    "model.completed",
    "tool.called",
    "tool.completed",
    "interrupt.raised",
    "interrupt.resolved",
    "subagent.spawned",
    "subagent.completed",
    "checkpoint.created",
    "error.raised",
    "export.created",
    "user_card.shown",
];

/// The [`Ev`] of an [`EVENT_TYPES`] code.
fn ev_of_code(c: u8) -> Ev {
    match EVENT_TYPES.get(c as usize) {
        Some(t) => event_kind(t.as_bytes()),
        None => Ev::Other,
    }
}

/// One payload object into `row` (its typed fields): false when the core is not sure of it
/// (not valid UTF-8, not strict JSON, a typed field of another type or given twice, a key
/// with escapes, anything around the object), as [`typed_payloads`] decides.
fn read_payload(p: &[u8], row: &mut Row) -> bool {
    std::str::from_utf8(p).is_ok() && {
        let mut sc = Scanner::new(p);
        payload(&mut sc, row).is_ok() && sc.pos == p.len()
    }
}

/// [`Derived`] of rows `lo..hi` (`offs` checked by the caller).
fn derive_range(codes: &[u8], offs: &[u8], data: &[u8], lo: usize, hi: usize) -> Option<Derived> {
    let est = hi - lo;
    let at = |i: usize| -> usize {
        let mut b = [0u8; 8];
        b.copy_from_slice(&offs[8 * i..8 * i + 8]);
        i64::from_ne_bytes(b) as usize
    };
    let bytes = at(hi) - at(lo);
    // UTF-8 checked once for the whole range: each span must start with `{` and end with
    // `}` (ASCII, so char boundaries), so the range is valid exactly when every span is
    std::str::from_utf8(&data[at(lo)..at(hi)]).ok()?;
    let mut out = Derived::new(est, bytes / 4);
    for i in lo..hi {
        let p = &data[at(i)..at(i + 1)];
        let mut row = Row::default();
        let mut sc = Scanner::new(p);
        if payload(&mut sc, &mut row).is_err() || sc.pos != p.len() {
            return None;
        }
        derive(&mut out, p, &row, ev_of_code(codes[i]), (i - lo) as i64)?;
    }
    Some(out)
}

/// The derived columns of many rows from their event type codes (`codes`, one byte per row,
/// see [`EVENT_TYPES`]) and payload objects (spans `data[offs[i]..offs[i+1]]`, `offs`: n + 1
/// int64 offsets): what the pleach loader derives for them (the block scanner's [`derive`]),
/// `turn` not yet carried forward. Split over replaykit's threads ([`crate::par`]) for large
/// inputs. `Ok(None)` when any payload is not one the core is sure of ([`typed_payloads`]'
/// rule) or arguments it cannot make canonical: the caller then runs the reference
/// derivation. `Err`: bad offsets, or not one code per row.
pub fn derive_payloads(codes: &[u8], offs: &[u8], data: &[u8]) -> Result<Option<Derived>, String> {
    let n = (offs.len() / 8).saturating_sub(1);
    if codes.len() != n {
        return Err(format!("{} type codes for {n} payloads", codes.len()));
    }
    crate::hash::map_spans(offs, data, |_| ())?; // the offsets, checked once
    if n == 0 {
        return Ok(Some(Derived::new(0, 0))); // (also no offsets at all: nothing to read)
    }
    derive_on(codes, offs, data, n, crate::par::threads())
}

/// [`derive_payloads`] of `n` rows on up to `threads` threads (the offsets checked).
fn derive_on(
    codes: &[u8],
    offs: &[u8],
    data: &[u8],
    n: usize,
    threads: usize,
) -> Result<Option<Derived>, String> {
    if threads < 2 || n < 8192 {
        let got = derive_range(codes, offs, data, 0, n);
        return Ok(got.filter(|d| !d.overflows()));
    }
    let ranges = crate::par::ranges(n, threads, 2048);
    let parts: Vec<Option<Derived>> = crate::par::map_ranges(&ranges, threads, |lo, hi| {
        derive_range(codes, offs, data, lo, hi)
    });
    let Some(parts) = parts.into_iter().collect::<Option<Vec<Derived>>>() else {
        return Ok(None);
    };
    let out = Derived::concat(parts, threads);
    Ok((!out.overflows()).then_some(out))
}

/// A column of [`Derived`] and the same column of the parts that follow it, for
/// [`Derived::concat`].
enum Join<'a> {
    Str(&'a mut StrCol, Vec<&'a StrCol>),
    Int(&'a mut I64Col, Vec<&'a I64Col>),
    Bool(&'a mut Bits, Vec<&'a Bits>),
}

impl Join<'_> {
    fn run(self) {
        match self {
            Join::Str(a, rest) => {
                a.data.reserve(rest.iter().map(|b| b.data.len()).sum());
                let rows: usize = rest.iter().map(|b| b.len()).sum();
                match &mut a.offsets {
                    crate::cols::Offsets::I32(v) => v.reserve(rows),
                    crate::cols::Offsets::I64(v) => v.reserve(rows),
                }
                a.valid.bytes.reserve(rows.div_ceil(8) + 1);
                rest.into_iter().for_each(|b| a.append(b));
            }
            Join::Int(a, rest) => {
                let rows: usize = rest.iter().map(|b| b.values.len()).sum();
                a.values.reserve(rows);
                a.valid.bytes.reserve(rows.div_ceil(8) + 1);
                rest.into_iter().for_each(|b| a.append(b));
            }
            Join::Bool(a, rest) => {
                a.bytes
                    .reserve(rest.iter().map(|b| b.bytes.len()).sum::<usize>() + 1);
                rest.into_iter().for_each(|b| a.append(b));
            }
        }
    }
}

impl Derived {
    /// The parts (consecutive ranges of rows, in order) as one: the same as appending each
    /// to the first, with every column joined on a task of its own (the
    /// largest first) on up to `threads` threads, each column's room reserved once.
    fn concat(mut parts: Vec<Derived>, threads: usize) -> Derived {
        if parts.is_empty() {
            return Derived::new(0, 0);
        }
        let rest = parts.split_off(1);
        let mut out = parts.pop().expect("one part");
        let mut base = out.turn.values.len() as i64;
        for p in &rest {
            out.py_hash_rows
                .extend(p.py_hash_rows.iter().map(|&r| r + base));
            out.args_bytes += p.args_bytes;
            base += p.turn.values.len() as i64;
        }
        let strs = |f: fn(&Derived) -> &StrCol| rest.iter().map(f).collect::<Vec<_>>();
        let ints = |f: fn(&Derived) -> &I64Col| rest.iter().map(f).collect::<Vec<_>>();
        let Derived {
            turn,
            event_id,
            ref_id,
            tool_name,
            args_hash,
            cache_key,
            is_error,
            finish,
            input_tokens,
            output_tokens,
            child,
            args,
            text,
            ..
        } = &mut out;
        let jobs = vec![
            Join::Str(text, strs(|d| &d.text)),
            Join::Str(args, strs(|d| &d.args)),
            Join::Str(ref_id, strs(|d| &d.ref_id)),
            Join::Str(args_hash, strs(|d| &d.args_hash)),
            Join::Str(cache_key, strs(|d| &d.cache_key)),
            Join::Str(event_id, strs(|d| &d.event_id)),
            Join::Str(tool_name, strs(|d| &d.tool_name)),
            Join::Str(finish, strs(|d| &d.finish)),
            Join::Str(child, strs(|d| &d.child)),
            Join::Int(turn, ints(|d| &d.turn)),
            Join::Int(input_tokens, ints(|d| &d.input_tokens)),
            Join::Int(output_tokens, ints(|d| &d.output_tokens)),
            Join::Bool(
                &mut is_error.values,
                rest.iter().map(|d| &d.is_error.values).collect(),
            ),
        ];
        crate::par::run_tasks(jobs, threads, Join::run);
        out
    }
}

/// Whitespace helper for tests and the fuzz target: true when `b` holds only JSON whitespace.
pub fn only_ws(b: &[u8]) -> bool {
    b.iter().all(|&c| is_ws(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spans_of;

    fn strs(c: &StrCol) -> Vec<Option<String>> {
        let offs: Vec<i64> = match &c.offsets {
            crate::cols::Offsets::I32(v) => v.iter().map(|&x| x as i64).collect(),
            crate::cols::Offsets::I64(v) => v.clone(),
        };
        (0..c.len())
            .map(|i| {
                let valid = c.valid.bytes[i / 8] & (1 << (i % 8)) != 0;
                valid.then(|| {
                    String::from_utf8(c.data[offs[i] as usize..offs[i + 1] as usize].to_vec())
                        .unwrap()
                })
            })
            .collect()
    }

    const ROW: &str = r#"{"tenant_id":"acme","chat_id":"c1","sequence_number":4,"event_type":"tool.called","payload":{"args":{"b":1,"a":"x"},"call_id":"tc1","tool":"grep"},"created_at":"2026-01-01T00:00:10Z","prev_hash":null,"row_hash":"ab"}"#;

    #[test]
    fn reads_a_tool_call() {
        let block = format!("{ROW}\n\n{ROW}\r\n");
        let out = scan_block(block.as_bytes()).expect("clean block");
        assert_eq!(out.n_lines, 3);
        assert_eq!(out.line, vec![0, 2]);
        assert_eq!(strs(&out.tenant_id), vec![Some("acme".into()); 2]);
        assert_eq!(strs(&out.d.args)[0].as_deref(), Some(r#"{"a":"x","b":1}"#));
        assert_eq!(strs(&out.d.text)[0].as_deref(), Some(r#"{"a":"x","b":1}"#));
        assert_eq!(strs(&out.d.ref_id)[0].as_deref(), Some("tc1"));
        assert_eq!(strs(&out.d.tool_name)[0].as_deref(), Some("grep"));
        assert_eq!(strs(&out.prev_hash)[0], None);
        assert_eq!(
            strs(&out.payload)[0].as_deref(),
            Some(r#"{"args":{"b":1,"a":"x"},"call_id":"tc1","tool":"grep"}"#)
        );
        // sha256 of the canonical text, first 32 hex digits
        let h = strs(&out.d.args_hash)[0].clone().unwrap();
        assert_eq!(h.len(), 32);
        assert_eq!(out.sequence_number.values, vec![4, 4]);
    }

    #[test]
    fn refuses_what_the_reference_reads_row_by_row() {
        let cases = [
            ROW.replace("\"sequence_number\":4", "\"sequence_number\":\"4\""),
            ROW.replace(
                "\"tenant_id\":\"acme\"",
                "\"tenant_id\":\"acme\",\"tenant_id\":\"b\"",
            ),
            ROW.replace("\"tenant_id\"", "\"tenant\\u005fid\""),
            ROW.replace("\"call_id\":\"tc1\"", "\"call_id\":5"),
            ROW.replace("\"chat_id\":\"c1\"", "\"chat_id\":\"c{1\""),
            ROW.replace("\"row_hash\":\"ab\"", "\"row_hash\":\"a}b\""),
            ROW.replace("\"b\":1", "\"b\":NaN"),
            format!(" {ROW}"),
            format!("{ROW} "),
            ROW.replace("\"payload\":{", "\"payload\":[{")
                .replace(",\"created_at\"", "],\"created_at\""),
        ];
        for c in cases {
            assert!(scan_block(format!("{c}\n").as_bytes()).is_none(), "{c}");
        }
        // mixed created_at representations in one block
        let epoch = ROW.replace("\"2026-01-01T00:00:10Z\"", "1767225610000");
        assert!(scan_block(format!("{ROW}\n{epoch}\n").as_bytes()).is_none());
        assert!(scan_block(format!("{epoch}\n{epoch}\n").as_bytes()).is_some());
        // invalid UTF-8
        let mut bad = ROW.as_bytes().to_vec();
        bad[30] = 0xff;
        bad.push(b'\n');
        assert!(scan_block(&bad).is_none());
    }

    #[test]
    fn string_arguments_leave_the_hash_to_the_reference() {
        let row = ROW.replace(r#"{"b":1,"a":"x"}"#, r#""{\"b\": 1}""#);
        let out = scan_block(format!("{row}\n").as_bytes()).unwrap();
        assert_eq!(out.d.py_hash_rows, vec![0]);
        assert_eq!(strs(&out.d.args)[0].as_deref(), Some(r#""{\"b\": 1}""#));
        assert_eq!(strs(&out.d.args_hash)[0], None);
    }

    #[test]
    fn typed_payload_fields() {
        let (o, d) = spans_of(&[
            r#"{"turn":3,"message_id":"m\u00e9","usage":{"input_tokens":5},"is_error":false}"#,
            r#"{"tool":"grep","args":{"x":[1,2]},"usage":null}"#,
            "{}",
        ]);
        let t = typed_payloads(&o, &d).unwrap().unwrap();
        assert_eq!(t.turn.values[0], 3);
        assert_eq!(strs(&t.strings[0]), vec![Some("mé".into()), None, None]);
        assert_eq!(strs(&t.strings[2]), vec![None, Some("grep".into()), None]);
        assert_eq!(t.usage, vec![true, false, false]);
        assert_eq!(t.input_tokens.values[0], 5);
        assert_eq!(t.is_error.values[0], 0);
    }

    #[test]
    fn typed_payloads_refuse_what_they_are_not_sure_of() {
        for bad in [
            r#"{"turn":"3"}"#,
            r#"{"turn":1.5}"#,
            r#"{"tool":"a","tool":"b"}"#,
            r#"{"tool":"a"} "#,
            r#"[1]"#,
            r#"{"t\u006fol":"a"}"#,
            r#"{"x":NaN}"#,
            r#"{"usage":{"input_tokens":"5"}}"#,
        ] {
            let (o, d) = spans_of(&["{}", bad]);
            assert!(typed_payloads(&o, &d).unwrap().is_none(), "{bad}");
        }
        let (o, mut d) = spans_of(&[r#"{"tool":"ab"}"#]);
        d[10] = 0xff;
        assert!(typed_payloads(&o, &d).unwrap().is_none());
        assert!(typed_payloads(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], b"").is_err());
    }

    #[test]
    fn derive_payloads_is_the_block_scanners_derivation() {
        let rows = [
            ROW.to_string(),
            ROW.replace(r#"{"b":1,"a":"x"}"#, r#""{\"b\": 1}""#),
            ROW.replace("tool.called", "model.completed").replace(
                "\"tool\":\"grep\"",
                "\"finish\":\"error\",\"usage\":{\"input_tokens\":3},\"text\":\"t\"",
            ),
            ROW.replace("tool.called", "turn.started").replace(
                "\"tool\":\"grep\"",
                "\"turn\":99999999999,\"message_id\":\"m\"",
            ),
            ROW.replace("tool.called", "other.type"),
        ];
        let block: String = rows.iter().map(|r| format!("{r}\n")).collect();
        let out = scan_block(block.as_bytes()).expect("clean block");
        let payloads: Vec<String> = strs(&out.payload).into_iter().map(|p| p.unwrap()).collect();
        let types = strs(&out.event_type);
        let code = |t: &str| EVENT_TYPES.iter().position(|e| *e == t).unwrap_or(99) as u8;
        let mut many = Vec::new();
        let mut codes = Vec::new();
        for _ in 0..2000 {
            // more than one thread's share: the split and the join are exercised
            for (p, t) in payloads.iter().zip(&types) {
                many.push(p.as_str());
                codes.push(code(t.as_deref().unwrap()));
            }
        }
        let (o, d) = spans_of(&many);
        let got = derive_payloads(&codes, &o, &d).unwrap().unwrap();
        let k = payloads.len();
        for (a, b) in [
            (&got.event_id, &out.d.event_id),
            (&got.ref_id, &out.d.ref_id),
            (&got.tool_name, &out.d.tool_name),
            (&got.args_hash, &out.d.args_hash),
            (&got.cache_key, &out.d.cache_key),
            (&got.finish, &out.d.finish),
            (&got.child, &out.d.child),
            (&got.args, &out.d.args),
            (&got.text, &out.d.text),
        ] {
            let (a, b) = (strs(a), strs(b));
            assert_eq!(a.len(), many.len());
            for (i, v) in a.iter().enumerate() {
                assert_eq!(v, &b[i % k], "row {i}");
            }
        }
        for i in 0..many.len() {
            assert_eq!(got.turn.get(i), out.d.turn.get(i % k));
            assert_eq!(got.input_tokens.get(i), out.d.input_tokens.get(i % k));
        }
        assert_eq!(got.turn.get(3), None); // beyond 32 bits
        assert_eq!(got.input_tokens.get(2), Some(3));
        let want: Vec<i64> = (0..2000).map(|j| (j * k + 1) as i64).collect();
        assert_eq!(got.py_hash_rows, want);
        // the same on any thread count: one range, or ranges joined column by column
        let cols = |d: &Derived| {
            [
                &d.event_id,
                &d.ref_id,
                &d.tool_name,
                &d.args_hash,
                &d.cache_key,
                &d.finish,
                &d.child,
                &d.args,
                &d.text,
            ]
            .map(strs)
        };
        let ints = |d: &Derived| {
            (0..many.len())
                .map(|i| (d.turn.get(i), d.input_tokens.get(i), d.output_tokens.get(i)))
                .collect::<Vec<_>>()
        };
        let one = derive_on(&codes, &o, &d, many.len(), 1).unwrap().unwrap();
        for t in [2, 3, 7] {
            let p = derive_on(&codes, &o, &d, many.len(), t).unwrap().unwrap();
            assert_eq!(cols(&p), cols(&one), "{t} threads");
            assert_eq!(ints(&p), ints(&one), "{t} threads");
            assert_eq!(p.is_error.values.bytes, one.is_error.values.bytes);
            assert_eq!(p.is_error.values.len, one.is_error.values.len);
            assert_eq!(p.py_hash_rows, one.py_hash_rows);
            assert_eq!(p.args_bytes, one.args_bytes);
        }
        // declined: a payload it is not sure of; errors: bad offsets, codes not one per row
        let (o, d) = spans_of(&["{}", r#"{"t\u006fol":"a"}"#]);
        assert!(derive_payloads(&[0, 5], &o, &d).unwrap().is_none());
        assert!(derive_payloads(&[0], &o, &d).is_err());
        let bad = [0u8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0];
        assert!(derive_payloads(&[0], &bad, b"{}").is_err());
        // no rows, with or without the one offset (found by the chain fuzz target)
        assert_eq!(
            derive_payloads(&[], &[], b"").unwrap().unwrap().text.len(),
            0
        );
        assert_eq!(
            derive_payloads(&[], &[0; 8], b"")
                .unwrap()
                .unwrap()
                .text
                .len(),
            0
        );
    }

    #[test]
    fn clean_blocks_and_the_tenant_rule() {
        assert!(scan_block(format!("{ROW}\n").as_bytes()).unwrap().clean);
        for bad in [
            ROW.replace("\"acme\"", "\"\""),
            ROW.replace("\"acme\"", "null"),
            ROW.replace("\"acme\"", "\"a\\u0085b\""),
            ROW.replace("\"acme\"", &format!("\"{}\"", "é".repeat(257))),
            ROW.replace("\"c1\"", "\"\""),
            ROW.replace("\"sequence_number\":4", "\"sequence_number\":-1"),
            ROW.replace("\"sequence_number\":4", "\"sequence_number\":null"),
            ROW.replace("\"tool.called\"", "\"\""),
        ] {
            let out = scan_block(format!("{ROW}\n{bad}\n").as_bytes()).unwrap();
            assert!(!out.clean, "{bad}");
        }
        assert!(tenant_ok("é".repeat(256).as_bytes()));
        assert!(!tenant_ok(b"a\xe2\x80\xa8"));
        assert!(tenant_ok(b"a\xe2\x80\xa7"));
    }

    #[test]
    fn lean_scan_keeps_the_per_run_columns_and_the_refusals() {
        let spawn = ROW
            .replace("tool.called", "subagent.spawned")
            .replace("\"tool\":\"grep\"", "\"child_chat_id\":\"c2\"");
        let done = ROW
            .replace("tool.called", "model.completed")
            .replace("\"tool\":\"grep\"", "\"finish\":\"error\"");
        let turn = ROW
            .replace("tool.called", "turn.started")
            .replace("\"tool\":\"grep\"", "\"turn\":7");
        let block = format!("{ROW}\n\n{spawn}\r\n{done}\n{turn}\n");
        let full = scan_block(block.as_bytes()).unwrap();
        let lean = scan_block_lean(block.as_bytes()).unwrap();
        assert_eq!(
            (lean.n_lines, &lean.line, lean.clean),
            (full.n_lines, &full.line, true)
        );
        for (a, b) in [
            (&lean.tenant_id, &full.tenant_id),
            (&lean.chat_id, &full.chat_id),
            (&lean.event_type, &full.event_type),
            (&lean.d.finish, &full.d.finish),
            (&lean.d.child, &full.d.child),
            (
                lean.created_str.as_ref().unwrap(),
                full.created_str.as_ref().unwrap(),
            ),
        ] {
            assert_eq!(strs(a), strs(b));
        }
        assert_eq!(strs(&lean.d.child)[1].as_deref(), Some("c2"));
        assert_eq!(lean.d.turn.values, full.d.turn.values);
        assert_eq!(lean.sequence_number.values, full.sequence_number.values);
        assert_eq!(lean.d.is_error.values.bytes, full.d.is_error.values.bytes);
        assert_eq!(
            (lean.payload.len(), lean.d.text.len(), lean.d.args.len()),
            (0, 0, 0)
        );
        // a block the full scan refuses, the lean one refuses too (here: arguments that do
        // not canonicalise, and a bad line)
        for bad in [
            ROW.replace("\"b\":1", "\"b\":NaN"),
            ROW.replace("\"sequence_number\":4", "\"sequence_number\":\"4\""),
        ] {
            let b = format!("{ROW}\n{bad}\n");
            assert!(scan_block(b.as_bytes()).is_none());
            assert!(scan_block_lean(b.as_bytes()).is_none(), "{bad}");
        }
        let unclean = ROW.replace("\"acme\"", "\"\"");
        assert!(
            !scan_block_lean(format!("{unclean}\n").as_bytes())
                .unwrap()
                .clean
        );
    }

    #[test]
    fn only_ws_helper() {
        assert!(only_ws(b" \t\r\n"));
        assert!(!only_ws(b" x"));
    }
}

/// Canonical JSON and hash of the top-level `args` of one payload object (the reference's
/// `_derive._tool_args` for one tool.called row): `Ok(None)` when there is no `args` or it is
/// null, `Ok(Some((text, Some(hash))))`, or `Ok(Some((text, None)))` for arguments given as a
/// JSON string (whose hash the reference decides). `Err` when the reference must read the
/// payload (not strict JSON, too deep, not an object).
pub type ToolArgs = Option<(Vec<u8>, Option<[u8; 32]>)>;

pub fn tool_args(p: &[u8]) -> R<ToolArgs> {
    let mut sc = Scanner::new(p);
    sc.skip_ws();
    sc.expect(b'{')?;
    let mut args: Option<(usize, usize)> = None;
    sc.skip_ws();
    if sc.peek() == Some(b'}') {
        sc.pos += 1;
    } else {
        loop {
            sc.skip_ws();
            let k = sc.string()?;
            let is_args = &*decoded(p, k) == b"args";
            sc.skip_ws();
            sc.expect(b':')?;
            sc.skip_ws();
            let start = sc.pos;
            sc.value(1)?;
            if is_args {
                args = Some((start, sc.pos));
            }
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
    }
    sc.skip_ws();
    if sc.pos != p.len() {
        return Err(Bail);
    }
    let Some((s, e)) = args else { return Ok(None) };
    let v = &p[s..e];
    if v == b"null" {
        return Ok(None);
    }
    let text = canon::canonical(v)?;
    if v[0] == b'"' {
        return Ok(Some((text, None)));
    }
    let d = Sha256::digest(&text);
    Ok(Some((text, Some(hex32(&d)))))
}

#[cfg(test)]
mod tool_args_tests {
    use super::*;

    #[test]
    fn args_of_payloads() {
        let (t, h) = tool_args(br#"{"args": {"b": [1.50, -0], "a": null}, "tool": "x"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(t, br#"{"a":null,"b":[1.5,0]}"#.to_vec());
        assert!(h.is_some());
        assert_eq!(tool_args(br#"{"tool": "x"}"#).unwrap(), None);
        assert_eq!(tool_args(br#"{"args": null}"#).unwrap(), None);
        assert_eq!(
            tool_args(br#"{"args": "s"}"#).unwrap(),
            Some((b"\"s\"".to_vec(), None))
        );
        assert!(tool_args(br#"{"args": NaN}"#).is_err());
        assert!(tool_args(br#"[1]"#).is_err());
        // an escaped key is the key it decodes to; the last of repeated keys counts
        let (t, _) = tool_args(br#"{"\u0061rgs": 1, "args": 2}"#)
            .unwrap()
            .unwrap();
        assert_eq!(t, b"2".to_vec());
    }
}
