//! The PyO3 module `replaykit._core`: buffers, columns, and the guarded entry points.

use std::ffi::{c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::cols::{Bits, BoolCol, F64Col, I64Col, Offsets, StrCol};
use crate::{chain, codex, gather, hash, otlp, pleach, toh, transcripts};

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Owned memory handed to Python: read-only bytes through the buffer protocol.
enum Storage {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    F64(Vec<f64>),
}

#[pyclass(frozen, module = "replaykit._core")]
pub struct NativeBuf {
    data: Storage,
}

impl NativeBuf {
    fn bytes(&self) -> &[u8] {
        // SAFETY: reinterpreting initialised integers as bytes (alignment 1, same length)
        unsafe {
            match &self.data {
                Storage::U8(v) => v.as_slice(),
                Storage::I32(v) => std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4),
                Storage::I64(v) => std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8),
                Storage::U64(v) => std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8),
                Storage::F64(v) => std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8),
            }
        }
    }
}

#[pymethods]
impl NativeBuf {
    fn __len__(&self) -> usize {
        self.bytes().len()
    }

    /// # Safety
    /// Called by CPython with a valid `Py_buffer` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("View is null"));
        }
        if (flags & ffi::PyBUF_WRITABLE) == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("NativeBuf is read-only"));
        }
        let data = slf.get().bytes();
        // SAFETY: `view` is valid (checked above); the buffer lives as long as `slf`, whose
        // reference the view keeps in `obj`
        unsafe {
            (*view).buf = data.as_ptr() as *mut c_void;
            (*view).len = data.len() as isize;
            (*view).readonly = 1;
            (*view).itemsize = 1;
            (*view).format = if (flags & ffi::PyBUF_FORMAT) == ffi::PyBUF_FORMAT {
                CString::new("B")
                    .map(|s| s.into_raw())
                    .unwrap_or(ptr::null_mut())
            } else {
                ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if (flags & ffi::PyBUF_ND) == ffi::PyBUF_ND {
                &mut (*view).len
            } else {
                ptr::null_mut()
            };
            (*view).strides = if (flags & ffi::PyBUF_STRIDES) == ffi::PyBUF_STRIDES {
                &mut (*view).itemsize
            } else {
                ptr::null_mut()
            };
            (*view).suboffsets = ptr::null_mut();
            (*view).internal = ptr::null_mut();
            (*view).obj = slf.into_any().into_ptr();
        }
        Ok(())
    }

    /// # Safety
    /// Called by CPython with the view this object filled.
    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: `format` is null or the CString made in __getbuffer__
        unsafe {
            if !(*view).format.is_null() {
                drop(CString::from_raw((*view).format));
            }
        }
    }
}

fn buf(py: Python<'_>, mut data: Storage) -> PyResult<Py<NativeBuf>> {
    // columns are built with generous capacities: the slack is handed back (in place) so
    // it does not stay resident for as long as Python holds the column
    match &mut data {
        Storage::U8(v) => v.shrink_to_fit(),
        Storage::I32(v) => v.shrink_to_fit(),
        Storage::I64(v) => v.shrink_to_fit(),
        Storage::U64(v) => v.shrink_to_fit(),
        Storage::F64(v) => v.shrink_to_fit(),
    }
    Py::new(py, NativeBuf { data })
}

fn validity(py: Python<'_>, bits: Bits) -> PyResult<Option<Py<NativeBuf>>> {
    if bits.unset == 0 {
        Ok(None)
    } else {
        Ok(Some(buf(py, Storage::U8(bits.bytes))?))
    }
}

/// A column as `(kind, length, null_count, validity, buffer1, buffer2)`; kind is one of
/// "string", "large_string", "int64", "bool".
fn str_col<'py>(py: Python<'py>, c: StrCol) -> PyResult<Bound<'py, PyTuple>> {
    let n = c.len();
    let nulls = c.valid.unset;
    let (kind, offs) = match c.offsets {
        Offsets::I32(v) => ("string", buf(py, Storage::I32(v))?),
        Offsets::I64(v) => ("large_string", buf(py, Storage::I64(v))?),
    };
    let data = buf(py, Storage::U8(c.data))?;
    (kind, n, nulls, validity(py, c.valid)?, offs, Some(data)).into_pyobject(py)
}

fn i64_col<'py>(py: Python<'py>, c: I64Col) -> PyResult<Bound<'py, PyTuple>> {
    let n = c.values.len();
    let nulls = c.valid.unset;
    let vals = buf(py, Storage::I64(c.values))?;
    (
        "int64",
        n,
        nulls,
        validity(py, c.valid)?,
        vals,
        None::<Py<NativeBuf>>,
    )
        .into_pyobject(py)
}

fn f64_col<'py>(py: Python<'py>, c: F64Col) -> PyResult<Bound<'py, PyTuple>> {
    let n = c.values.len();
    let nulls = c.valid.unset;
    let vals = buf(py, Storage::F64(c.values))?;
    (
        "float64",
        n,
        nulls,
        validity(py, c.valid)?,
        vals,
        None::<Py<NativeBuf>>,
    )
        .into_pyobject(py)
}

fn bool_col<'py>(py: Python<'py>, c: BoolCol) -> PyResult<Bound<'py, PyTuple>> {
    let n = c.values.len;
    let vals = buf(py, Storage::U8(c.values.bytes))?;
    (
        "bool",
        n,
        0usize,
        None::<Py<NativeBuf>>,
        vals,
        None::<Py<NativeBuf>>,
    )
        .into_pyobject(py)
}

/// Run `f` with the GIL released, catching panics (counted; reported as None).
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> Option<T> {
    py.detach(|| match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(_) => {
            PANICS.fetch_add(1, Ordering::Relaxed);
            None
        }
    })
}

/// Run `scan` on the bytes of the contiguous buffer `obj` with the GIL released and panics
/// caught: None when the scanner declines the input or panicked (counted in `panics()`).
fn scan_buffer<'py, T: Send>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    what: &str,
    scan: impl FnOnce(&[u8]) -> Option<T> + Send,
) -> PyResult<Option<T>> {
    let pb = PyBuffer::<u8>::get(obj)?;
    if !pb.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{what} must be a contiguous bytes-like object"
        )));
    }
    let ptr = pb.buf_ptr() as usize;
    let len = pb.len_bytes();
    let got = guarded(py, move || {
        // SAFETY: the buffer is held (pb) for the duration of the call, contiguous, and not
        // resized by Python while the GIL is released (the caller owns the bytes)
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        scan(bytes)
    });
    drop(pb);
    Ok(got.flatten())
}

/// Scan a pleach JSONL block (bytes ending at a line end). Returns None when the block must
/// be read by the reference path, else `(n_lines, line, py_hash_rows, columns, clean)` where
/// `columns` is a list of `(name, column)` (see `str_col`).
///
/// `lean=True` (`replaykit summary`): the same validation and refusals, but only the
/// per-run columns (tenant_id, chat_id, sequence_number, event_type, created_at, turn,
/// is_error, finish, _child) are built and returned.
#[pyfunction]
#[pyo3(signature = (block, lean = false))]
fn scan_pleach_block<'py>(
    py: Python<'py>,
    block: &Bound<'py, PyAny>,
    lean: bool,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let scan = if lean {
        pleach::scan_block_lean
    } else {
        pleach::scan_block
    };
    let Some(mut out) = scan_buffer(py, block, "block", scan)? else {
        return Ok(None);
    };
    let line = buf(py, Storage::I64(out.line))?;
    let hash_rows = buf(py, Storage::I64(std::mem::take(&mut out.d.py_hash_rows)))?;
    let cols = PyList::empty(py);
    macro_rules! s {
        ($name:expr, $c:expr) => {
            cols.append(($name, str_col(py, $c)?))?
        };
    }
    macro_rules! i {
        ($name:expr, $c:expr) => {
            cols.append(($name, i64_col(py, $c)?))?
        };
    }
    s!("tenant_id", out.tenant_id);
    s!("chat_id", out.chat_id);
    i!("sequence_number", out.sequence_number);
    s!("event_type", out.event_type);
    if let Some(c) = out.created_str {
        s!("created_at", c);
    }
    if let Some(c) = out.created_int {
        i!("created_at", c);
    }
    if out.lean {
        i!("turn", out.d.turn);
        cols.append(("is_error", bool_col(py, out.d.is_error)?))?;
        s!("finish", out.d.finish);
        s!("_child", out.d.child);
        return Ok(Some(
            (out.n_lines, line, hash_rows, cols, out.clean).into_pyobject(py)?,
        ));
    }
    s!("prev_hash", out.prev_hash);
    s!("row_hash", out.row_hash);
    s!("payload", out.payload);
    derived_cols(py, &cols, out.d)?;
    Ok(Some(
        (out.n_lines, line, hash_rows, cols, out.clean).into_pyobject(py)?,
    ))
}

/// Append the derived columns of `d` to `cols` as `(name, column)` (the block scanner's
/// names: `_child` is the subagent child, `args` the canonical tool-call arguments).
fn derived_cols(py: Python<'_>, cols: &Bound<'_, PyList>, d: pleach::Derived) -> PyResult<()> {
    cols.append(("turn", i64_col(py, d.turn)?))?;
    for (name, c) in [
        ("event_id", d.event_id),
        ("ref_id", d.ref_id),
        ("tool_name", d.tool_name),
        ("args_hash", d.args_hash),
        ("cache_key", d.cache_key),
    ] {
        cols.append((name, str_col(py, c)?))?;
    }
    cols.append(("is_error", bool_col(py, d.is_error)?))?;
    cols.append(("finish", str_col(py, d.finish)?))?;
    cols.append(("input_tokens", i64_col(py, d.input_tokens)?))?;
    cols.append(("output_tokens", i64_col(py, d.output_tokens)?))?;
    for (name, c) in [("_child", d.child), ("args", d.args), ("text", d.text)] {
        cols.append((name, str_col(py, c)?))?;
    }
    Ok(())
}

/// The derived columns of many pleach rows from their event type codes (`codes`: one byte per
/// row, an index of `EVENT_TYPES`) and payload objects (`offsets`: n + 1 int64 offsets into
/// `data`), as the loader derives them (`turn` not carried forward): None when the reference
/// must derive them, else `(py_hash_rows, columns)`, `columns` a list of `(name, column)`
/// (see `str_col`) and `py_hash_rows` the rows whose arguments are a JSON string (their
/// `args_hash` is null here: the reference hashes them).
#[pyfunction]
fn derive_pleach<'py>(
    py: Python<'py>,
    codes: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let cb = PyBuffer::<u8>::get(codes)?;
    if !cb.is_c_contiguous() {
        return Err(PyValueError::new_err("codes must be contiguous bytes"));
    }
    let (cp, cl) = (cb.buf_ptr() as usize, cb.len_bytes());
    let got = over_spans(py, offsets, data, "derive_pleach", move |offs, data| {
        // SAFETY: the codes buffer is held (cb) until after the call, and contiguous
        let codes = unsafe { std::slice::from_raw_parts(cp as *const u8, cl) };
        pleach::derive_payloads(codes, offs, data)
    })?;
    drop(cb);
    let Some(mut d) = got else {
        return Ok(None);
    };
    let rows = buf(py, Storage::I64(std::mem::take(&mut d.py_hash_rows)))?;
    let cols = PyList::empty(py);
    derived_cols(py, &cols, d)?;
    Ok(Some((rows, cols).into_pyobject(py)?))
}

/// Scan a whole toh session log (the file's bytes). Returns None when the reference path
/// must read the file, else `(header_start, header_end, line, seq, py_hash_rows, columns)`
/// where `columns` is a list of `(name, column)` (see `str_col`), one value per event.
#[pyfunction]
fn scan_toh_file<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(out) = scan_buffer(py, data, "data", toh::scan_file)? else {
        return Ok(None);
    };
    let line = buf(py, Storage::I64(out.line))?;
    let seq = buf(py, Storage::I64(out.seq))?;
    let hash_rows = buf(py, Storage::I64(out.py_hash_rows))?;
    let cols = PyList::empty(py);
    macro_rules! s {
        ($name:expr, $c:expr) => {
            cols.append(($name, str_col(py, $c)?))?
        };
    }
    macro_rules! i {
        ($name:expr, $c:expr) => {
            cols.append(($name, i64_col(py, $c)?))?
        };
    }
    cols.append(("time", f64_col(py, out.time)?))?;
    s!("type", out.typ);
    s!("payload", out.payload);
    i!("turn", out.turn);
    i!("step", out.step);
    s!("chunk_type", out.chunk_type);
    s!("text", out.text);
    s!("ref_id", out.ref_id);
    s!("tool_name", out.tool_name);
    s!("args_hash", out.args_hash);
    s!("cache_key", out.cache_key);
    cols.append(("is_error", bool_col(py, out.is_error)?))?;
    s!("finish", out.finish);
    i!("input_tokens", out.input_tokens);
    i!("output_tokens", out.output_tokens);
    s!("event_id", out.event_id);
    s!("call_ids", out.call_id);
    Ok(Some(
        (out.header.0, out.header.1, line, seq, hash_rows, cols).into_pyobject(py)?,
    ))
}

/// File paths as the OS names them (the bytes Python's `os.fsencode` gave).
fn os_paths(paths: &[Vec<u8>]) -> Vec<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    paths
        .iter()
        .map(|p| std::path::Path::new(std::ffi::OsStr::from_bytes(p)).to_path_buf())
        .collect()
}

/// Texts as their UTF-8 bytes, for the scanners' byte-level writers.
fn utf8_bytes(texts: Vec<String>) -> Vec<Vec<u8>> {
    texts.into_iter().map(String::into_bytes).collect()
}

/// Scan Claude Code transcripts: `paths` (file system paths as bytes), `stems` (their names
/// without the suffix), `sources` (each file's `source` value), on up to `threads` threads.
/// Returns `(ok, row_start, run_start, runs, run, seq, line, columns)`: `ok` a list of bools
/// (False: the reference must read that file), `row_start` / `run_start` int64 buffers (each
/// file's first row and first run; n + 1 values), `runs` a list of `(run_id, parent_run_id,
/// created_at, attrs, rows)` (attrs a list of `(key, value)`), `run` / `seq` / `line` int64
/// buffers (each row's index into `runs`, its seq within the run in its file, its line) and
/// `columns` a list of `(name, column)` (see `str_col`). Errors: a panic (a bug) is a
/// `RuntimeError`; the caller then reads every file with the reference.
#[pyfunction]
fn scan_claude_code_files<'py>(
    py: Python<'py>,
    paths: Vec<Vec<u8>>,
    stems: Vec<String>,
    sources: Vec<String>,
    threads: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let paths = os_paths(&paths);
    let stems = utf8_bytes(stems);
    let sources = utf8_bytes(sources);
    let got = guarded(py, move || {
        transcripts::scan_claude_code_files(&paths, &stems, &sources, threads)
    })
    .ok_or_else(|| PyRuntimeError::new_err("scan_claude_code_files panicked"))?;
    files_tuple(py, got)
}

/// Scan Codex rollouts (`codex.rs`): `paths` as bytes, `fallbacks` (each file's session id
/// when its session_meta names none), `sources`, `threads`. Returns the tuple
/// `scan_claude_code_files` returns; each file read natively has at most one run, whose attrs
/// are `[("meta", <canonical JSON of the session_meta payload>)]` when it has one. Errors: a
/// panic (a bug) is a `RuntimeError`; the caller then reads every file with the reference.
#[pyfunction]
fn scan_codex_files<'py>(
    py: Python<'py>,
    paths: Vec<Vec<u8>>,
    fallbacks: Vec<String>,
    sources: Vec<String>,
    threads: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let paths = os_paths(&paths);
    let fallbacks = utf8_bytes(fallbacks);
    let sources = utf8_bytes(sources);
    let got = guarded(py, move || {
        codex::scan_codex_files(&paths, &fallbacks, &sources, threads)
    })
    .ok_or_else(|| PyRuntimeError::new_err("scan_codex_files panicked"))?;
    files_tuple(py, got)
}

/// The Python tuple of scanned transcript files (`scan_claude_code_files`' return value).
fn files_tuple(py: Python<'_>, got: transcripts::CcFiles) -> PyResult<Bound<'_, PyTuple>> {
    let out = got.out;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let runs = PyList::empty(py);
    for r in &out.runs {
        let attrs: Vec<(&str, String)> = r.attrs.iter().map(|(k, v)| (*k, text(v))).collect();
        runs.append((
            text(&r.run_id),
            r.parent.as_deref().map(text),
            r.created_at.as_deref().map(text),
            attrs,
            r.rows,
        ))?;
    }
    let row_start = buf(py, Storage::I64(got.row_start))?;
    let run_start = buf(py, Storage::I64(got.run_start))?;
    let run = buf(py, Storage::I64(out.run))?;
    let seq = buf(py, Storage::I64(out.seq))?;
    let line = buf(py, Storage::I64(out.line))?;
    let cols = PyList::empty(py);
    macro_rules! s {
        ($name:expr, $c:expr) => {
            cols.append(($name, str_col(py, $c)?))?
        };
    }
    macro_rules! i {
        ($name:expr, $c:expr) => {
            cols.append(($name, i64_col(py, $c)?))?
        };
    }
    s!("run_id", out.run_id);
    s!("parent_run_id", out.parent_run_id);
    s!("source", out.source);
    s!("type", out.typ);
    s!("kind", out.kind);
    s!("ts", out.ts);
    i!("turn", out.turn);
    i!("step", out.step);
    s!("event_id", out.event_id);
    s!("ref_id", out.ref_id);
    s!("tool_name", out.tool_name);
    s!("args_hash", out.args_hash);
    cols.append(("is_error", bool_col(py, out.is_error)?))?;
    s!("finish", out.finish);
    i!("input_tokens", out.input_tokens);
    i!("output_tokens", out.output_tokens);
    s!("chunk_type", out.chunk_type);
    s!("text", out.text);
    s!("payload", out.payload);
    (got.ok, row_start, run_start, runs, run, seq, line, cols).into_pyobject(py)
}

/// Decode the OTLP/JSON documents of a file (`lines`: one per non-blank line, else the whole
/// file; see `otlp.rs`). Returns None when the core panicked, else a list of
/// `(line, start, end, records)`: `records` is the `[[span, ...], [log record, ...]]` JSON
/// text of the document, or None when the reference must read `data[start:end]`.
#[pyfunction]
fn scan_otlp_json<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    lines: bool,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let Some(docs) = scan_buffer(py, data, "data", |b| Some(otlp::scan(b, lines)))? else {
        return Ok(None);
    };
    let out = PyList::empty(py);
    for d in docs {
        let text = d.text.map(|t| pyo3::types::PyBytes::new(py, &t));
        out.append((d.line, d.start, d.end, text))?;
    }
    Ok(Some(out))
}

/// Run `f` over the bytes of two contiguous buffers (`offsets`: int64 offsets into `data`)
/// with the GIL released and panics caught: a message from `f` is a `ValueError`, a panic a
/// `RuntimeError` naming `what`.
fn over_spans<T: Send>(
    py: Python<'_>,
    offsets: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(&[u8], &[u8]) -> Result<T, String> + Send,
) -> PyResult<T> {
    let ob = PyBuffer::<u8>::get(offsets)?;
    let db = PyBuffer::<u8>::get(data)?;
    if !ob.is_c_contiguous() || !db.is_c_contiguous() || ob.len_bytes() % 8 != 0 {
        return Err(PyValueError::new_err(
            "offsets must be contiguous int64, data contiguous",
        ));
    }
    let (op, ol) = (ob.buf_ptr() as usize, ob.len_bytes());
    let (dp, dl) = (db.buf_ptr() as usize, db.len_bytes());
    let got = guarded(py, move || {
        // SAFETY: both buffers are held (ob, db) until after the call, and contiguous
        let offs = unsafe { std::slice::from_raw_parts(op as *const u8, ol) };
        let data = unsafe { std::slice::from_raw_parts(dp as *const u8, dl) };
        f(offs, data)
    });
    drop((ob, db));
    match got {
        Some(Ok(v)) => Ok(v),
        Some(Err(msg)) => Err(PyValueError::new_err(msg)),
        None => Err(PyRuntimeError::new_err(format!(
            "replaykit native core: internal error (panic) in {what}"
        ))),
    }
}

/// SHA-256 of each value of a binary column (`offsets`: n + 1 int64 offsets into `data`),
/// as 32 raw bytes per value, concatenated.
#[pyfunction]
fn sha256_many<'py>(
    py: Python<'py>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Py<NativeBuf>> {
    let v = over_spans(py, offsets, data, "sha256_many", hash::sha256_spans)?;
    buf(py, Storage::U8(v))
}

/// Tool-call arguments of many payloads (`offsets`: n + 1 int64 offsets into `data`, one
/// payload object each): `(args, args_hash, py_rows)`, two string columns and the rows the
/// reference must compute (payload not read here, or arguments given as a JSON string).
#[pyfunction]
fn tool_args_many<'py>(
    py: Python<'py>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (args, hashes, py_rows) = over_spans(py, offsets, data, "tool_args_many", |offs, data| {
        let n = (offs.len() / 8).saturating_sub(1);
        let mut args = StrCol::new(false, n, n * 32);
        let mut hashes = StrCol::new(false, n, n * 32);
        let mut py_rows: Vec<i64> = Vec::new();
        let rows = hash::par_map_spans(offs, data, pleach::tool_args)?;
        for (i, got) in rows.into_iter().enumerate() {
            match got {
                Ok(Some((text, Some(h)))) => {
                    args.push(&text);
                    hashes.push(&h);
                }
                Ok(Some((text, None))) => {
                    // arguments given as a JSON string: the reference hashes them
                    args.push(&text);
                    hashes.push_null();
                    py_rows.push(i as i64);
                }
                Ok(None) => {
                    args.push_null();
                    hashes.push_null();
                }
                Err(_) => {
                    args.push_null();
                    hashes.push_null();
                    py_rows.push(i as i64);
                }
            }
        }
        Ok((args, hashes, py_rows))
    })?;
    if args.overflows() || hashes.overflows() {
        return Err(PyValueError::new_err(
            "tool arguments exceed 2 GB in one call",
        ));
    }
    let rows = buf(py, Storage::I64(py_rows))?;
    (str_col(py, args)?, str_col(py, hashes)?, rows).into_pyobject(py)
}

/// `H` of `replaykit.fold.hashing` (the state hash's text hash) of each span of a string
/// column (`offsets`: n + 1 int64 offsets into `data`), as n uint64 values.
#[pyfunction]
fn text_hashes<'py>(
    py: Python<'py>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Py<NativeBuf>> {
    let v = over_spans(py, offsets, data, "text_hashes", hash::text_hashes)?;
    buf(py, Storage::U64(v))
}

/// The typed payload fields of many payload objects (`offsets`: n + 1 int64 offsets into
/// `data`), as Arrow's typed parse of the pleach loader reads them: None when the reference
/// must parse the column, else a list of `(name, column)` (see `str_col`; `is_error` is an
/// int64 column of 0/1, `usage` a bool column saying where `usage` was an object).
#[pyfunction]
fn typed_payloads<'py>(
    py: Python<'py>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let got = over_spans(py, offsets, data, "typed_payloads", pleach::typed_payloads)?;
    let Some(t) = got else {
        return Ok(None);
    };
    let cols = PyList::empty(py);
    cols.append(("turn", i64_col(py, t.turn)?))?;
    for (name, c) in pleach::TYPED_STRINGS.iter().zip(t.strings) {
        cols.append((*name, str_col(py, c)?))?;
    }
    cols.append(("is_error", i64_col(py, t.is_error)?))?;
    let mut usage = BoolCol::default();
    for v in t.usage {
        usage.push(v);
    }
    cols.append(("usage", bool_col(py, usage)?))?;
    cols.append(("input_tokens", i64_col(py, t.input_tokens)?))?;
    cols.append(("output_tokens", i64_col(py, t.output_tokens)?))?;
    Ok(Some(cols))
}

/// A piece of `chain_digests`' content spec with its buffers as raw (address, length) pairs,
/// held by the caller's `PyBuffer`s while the GIL is released.
enum RawPiece {
    Lit(usize, usize),
    Str([(usize, usize); 3]),
    Dict([(usize, usize); 4]),
    Int([(usize, usize); 2]),
    Bool([(usize, usize); 2]),
    Member([(usize, usize); 4]),
}

/// The buffers of a content spec, kept alive (and unmoved) for the call.
struct Held(Vec<PyBuffer<u8>>);

impl Held {
    /// `(address, length)` of a contiguous bytes-like object (None: `(0, 0)`, an absent
    /// validity).
    fn take(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
        if obj.is_none() {
            return Ok((0, 0));
        }
        let b = PyBuffer::<u8>::get(obj)?;
        if !b.is_c_contiguous() {
            return Err(PyValueError::new_err("buffers must be contiguous"));
        }
        let r = (b.buf_ptr() as usize, b.len_bytes());
        self.0.push(b);
        Ok(r)
    }
}

fn raw_pieces(held: &mut Held, spec: &Bound<'_, PyList>) -> PyResult<Vec<RawPiece>> {
    let mut out = Vec::new();
    for item in spec.iter() {
        let t = item.cast::<PyTuple>()?;
        let kind: String = t.get_item(0)?.extract()?;
        let mut at = |k: usize| -> PyResult<(usize, usize)> { held.take(&t.get_item(k)?) };
        out.push(match kind.as_str() {
            "lit" => {
                let (p, l) = at(1)?;
                RawPiece::Lit(p, l)
            }
            "str" => RawPiece::Str([at(1)?, at(2)?, at(3)?]),
            "dict" => RawPiece::Dict([at(1)?, at(2)?, at(3)?, at(4)?]),
            "int" => RawPiece::Int([at(1)?, at(2)?]),
            "bool" => RawPiece::Bool([at(1)?, at(2)?]),
            "member" => RawPiece::Member([at(1)?, at(2)?, at(3)?, at(4)?]),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown piece kind {other:?}"
                )));
            }
        });
    }
    Ok(out)
}

/// SAFETY (callers): `(p, l)` comes from a `PyBuffer` held for the whole call, or is (0, 0).
unsafe fn sl<'a>(r: (usize, usize)) -> &'a [u8] {
    if r.1 == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(r.0 as *const u8, r.1) }
    }
}

/// SAFETY: as [`sl`]; a validity of length 0 is absent (every row valid).
unsafe fn valid<'a>(r: (usize, usize)) -> Option<&'a [u8]> {
    if r.0 == 0 {
        None
    } else {
        Some(unsafe { sl(r) })
    }
}

fn cook(raw: &[RawPiece]) -> Vec<chain::Piece<'_>> {
    // SAFETY: every pair was taken from a buffer held by the caller (see `chain_digests`)
    raw.iter()
        .map(|r| unsafe {
            match *r {
                RawPiece::Lit(p, l) => chain::Piece::Lit(sl((p, l))),
                RawPiece::Str([o, d, v]) => chain::Piece::Str {
                    spans: chain::Spans {
                        offs: sl(o),
                        data: sl(d),
                    },
                    valid: valid(v),
                },
                RawPiece::Dict([i, v, o, d]) => {
                    let spans = chain::Spans {
                        offs: sl(o),
                        data: sl(d),
                    };
                    let values = (0..spans.len())
                        .map(|k| {
                            let mut e = Vec::new();
                            chain::push_json_str(&mut e, spans.get(k));
                            e
                        })
                        .collect();
                    chain::Piece::Dict {
                        idx: sl(i),
                        valid: valid(v),
                        values,
                    }
                }
                RawPiece::Int([x, v]) => chain::Piece::Int {
                    vals: sl(x),
                    valid: valid(v),
                },
                RawPiece::Bool([x, v]) => chain::Piece::Bool {
                    vals: sl(x),
                    valid: valid(v),
                },
                RawPiece::Member([p, o, d, v]) => chain::Piece::Member {
                    prefix: sl(p),
                    spans: chain::Spans {
                        offs: sl(o),
                        data: sl(d),
                    },
                    valid: valid(v),
                },
            }
        })
        .collect()
}

/// The hex sha256 of `prev || content` of each of `n` rows (64 bytes per row), the content
/// described by three lists of pieces (`head`, `derived` where the `sealed` mask is set or
/// everywhere when it is None, `tail`; see `chain.rs` and `integrity._chain_pieces`) and
/// `prev` one of `("stored", offsets, data, valid)` (verification, on `threads` threads) or
/// `("chained", starts, genesis)` (stamping).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn chain_digests<'py>(
    py: Python<'py>,
    head: &Bound<'py, PyList>,
    derived: &Bound<'py, PyList>,
    sealed: &Bound<'py, PyAny>,
    tail: &Bound<'py, PyList>,
    prev: &Bound<'py, PyTuple>,
    n: usize,
    threads: usize,
) -> PyResult<Py<NativeBuf>> {
    let mut held = Held(Vec::new());
    let (h, d, t) = (
        raw_pieces(&mut held, head)?,
        raw_pieces(&mut held, derived)?,
        raw_pieces(&mut held, tail)?,
    );
    let sealed = held.take(sealed)?;
    let kind: String = prev.get_item(0)?.extract()?;
    let stored = kind == "stored";
    let p = match kind.as_str() {
        "stored" => [
            held.take(&prev.get_item(1)?)?,
            held.take(&prev.get_item(2)?)?,
            held.take(&prev.get_item(3)?)?,
        ],
        "chained" => [
            held.take(&prev.get_item(1)?)?,
            held.take(&prev.get_item(2)?)?,
            (0, 0),
        ],
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown prev kind {other:?}"
            )))
        }
    };
    let got = guarded(py, move || {
        let content = chain::Content {
            head: cook(&h),
            derived: cook(&d),
            // SAFETY: held by `held` until after this call
            sealed: unsafe { valid(sealed) },
            tail: cook(&t),
        };
        // SAFETY: as above
        let prev = unsafe {
            if stored {
                chain::Prev::Stored {
                    spans: chain::Spans {
                        offs: sl(p[0]),
                        data: sl(p[1]),
                    },
                    valid: valid(p[2]),
                }
            } else {
                chain::Prev::Chained {
                    starts: sl(p[0]),
                    genesis: sl(p[1]),
                }
            }
        };
        chain::digests(&content, &prev, n, threads)
    });
    drop(held);
    match got {
        Some(Ok(v)) => buf(py, Storage::U8(v)),
        Some(Err(msg)) => Err(PyValueError::new_err(msg)),
        None => Err(PyRuntimeError::new_err(
            "replaykit native core: internal error (panic) in chain_digests",
        )),
    }
}

/// Native-endian int64 values of a byte buffer: viewed in place when aligned (numpy's
/// arrays are), else copied.
fn int64s(b: &[u8]) -> std::borrow::Cow<'_, [i64]> {
    let b = &b[..b.len() / 8 * 8];
    // SAFETY: every bit pattern is a valid i64
    let (pre, mid, post) = unsafe { b.align_to::<i64>() };
    if pre.is_empty() && post.is_empty() {
        return std::borrow::Cow::Borrowed(mid);
    }
    std::borrow::Cow::Owned(
        b.chunks_exact(8)
            .map(|c| i64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

/// A chunk for `take_columns`: (row offset, rows, validity, buffer1, buffer2), buffers as
/// raw (address, length) pairs.
type RawChunk = (usize, usize, (usize, usize), (usize, usize), (usize, usize));

/// A column for `take_columns`, with its buffers as raw (address, length) pairs held by the
/// caller's `PyBuffer`s while the GIL is released.
struct RawColumn {
    layout: gather::Layout,
    /// (offset, len, validity, b1, b2) per chunk
    chunks: Vec<RawChunk>,
}

fn layout_of(name: &str) -> PyResult<gather::Layout> {
    Ok(match name {
        "str32" => gather::Layout::Str32,
        "str64" => gather::Layout::Str64,
        "fixed1" => gather::Layout::Fixed(1),
        "fixed2" => gather::Layout::Fixed(2),
        "fixed4" => gather::Layout::Fixed(4),
        "fixed8" => gather::Layout::Fixed(8),
        "bool" => gather::Layout::Bool,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown column layout {other:?}"
            )))
        }
    })
}

/// Gather (Arrow's `take`) of several chunked columns in one order, on `threads` threads with
/// the GIL released. `columns`: a list of `(layout, chunks)`, layout one of "str32", "str64",
/// "fixed1/2/4/8", "bool", each chunk `(offset, length, validity, buffer1, buffer2)` in Arrow's
/// layout (None for an absent validity or second buffer); `order`: int64 row numbers over each
/// column's chunks one after the other. Returns one `(length, null_count, validity, buffer1,
/// buffer2)` per column (buffer2: the string data, else None).
#[pyfunction]
fn take_columns<'py>(
    py: Python<'py>,
    columns: &Bound<'py, PyList>,
    order: &Bound<'py, PyAny>,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let mut held = Held(Vec::new());
    let mut raw: Vec<RawColumn> = Vec::new();
    for col in columns.iter() {
        let t = col.cast::<PyTuple>()?;
        let layout = layout_of(&t.get_item(0)?.extract::<String>()?)?;
        let mut chunks = Vec::new();
        for ch in t.get_item(1)?.cast::<PyList>()?.iter() {
            let c = ch.cast::<PyTuple>()?;
            let offset: usize = c.get_item(0)?.extract()?;
            let len: usize = c.get_item(1)?.extract()?;
            let v = held.take(&c.get_item(2)?)?;
            let b1 = held.take(&c.get_item(3)?)?;
            let b2 = held.take(&c.get_item(4)?)?;
            chunks.push((offset, len, v, b1, b2));
        }
        raw.push(RawColumn { layout, chunks });
    }
    let order = held.take(order)?;
    if order.1 % 8 != 0 {
        return Err(PyValueError::new_err("order must be int64"));
    }
    let got = guarded(py, move || {
        // SAFETY: every pair comes from a buffer held by `held` until after this call
        let order_bytes = unsafe { sl(order) };
        let order = int64s(order_bytes);
        let cols: Vec<(gather::Layout, Vec<gather::Chunk<'_>>)> = raw
            .iter()
            .map(|c| {
                let chunks = c
                    .chunks
                    .iter()
                    .map(|&(offset, len, v, b1, b2)| unsafe {
                        gather::Chunk {
                            offset,
                            len,
                            valid: valid(v),
                            b1: sl(b1),
                            b2: sl(b2),
                        }
                    })
                    .collect();
                (c.layout, chunks)
            })
            .collect();
        gather::take_many(&cols, &order, threads)
    });
    drop(held);
    let outs = match got {
        Some(Ok(v)) => v,
        Some(Err(msg)) => return Err(PyValueError::new_err(msg)),
        None => {
            return Err(PyRuntimeError::new_err(
                "replaykit native core: internal error (panic) in take_columns",
            ))
        }
    };
    let list = PyList::empty(py);
    for g in outs {
        let v = match g.valid {
            Some(bits) => Some(buf(py, Storage::U8(bits))?),
            None => None,
        };
        let (b1, b2) = match g.values {
            gather::Values::Str32(o, d) => {
                (buf(py, Storage::I32(o))?, Some(buf(py, Storage::U8(d))?))
            }
            gather::Values::Str64(o, d) => {
                (buf(py, Storage::I64(o))?, Some(buf(py, Storage::U8(d))?))
            }
            gather::Values::Bytes(b) => (buf(py, Storage::U8(b))?, None),
        };
        list.append((g.len, g.nulls, v, b1, b2))?;
    }
    Ok(list)
}

/// An output buffer filled by `scatter_rows` (zeroed pages, resident only once written),
/// handed to Python by `out_bytes`.
#[pyclass(frozen, module = "replaykit._core")]
pub struct OutBuf {
    data: std::sync::Mutex<Option<Vec<u8>>>,
}

/// A zeroed output buffer of `size` bytes for `scatter_rows`.
#[pyfunction]
fn out_buffer(size: usize) -> OutBuf {
    OutBuf {
        data: std::sync::Mutex::new(Some(vec![0u8; size])),
    }
}

/// Copy the rows of one string chunk `(layout, offset, length, offsets, data)` into `out`,
/// row i to byte `dest[i]` (int64; < 0: skipped), on one thread per range cut by `splits`
/// (see `gather::scatter`), with the GIL released.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn scatter_rows<'py>(
    py: Python<'py>,
    out: &Bound<'py, OutBuf>,
    layout: &str,
    offset: usize,
    length: usize,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    dest: &Bound<'py, PyAny>,
    splits: Vec<usize>,
) -> PyResult<()> {
    let layout = layout_of(layout)?;
    let mut held = Held(Vec::new());
    let (o, d, t) = (held.take(offsets)?, held.take(data)?, held.take(dest)?);
    if t.1 % 8 != 0 {
        return Err(PyValueError::new_err("dest must be int64"));
    }
    let cell = out.get();
    let got = guarded(py, move || {
        // SAFETY: the buffers are held by `held` until after this call
        let (ob, db, tb) = unsafe { (sl(o), sl(d), sl(t)) };
        let dest = int64s(tb);
        let chunk = gather::Chunk {
            offset,
            len: length,
            valid: None,
            b1: ob,
            b2: db,
        };
        let mut guard = cell
            .data
            .lock()
            .map_err(|_| "output buffer poisoned".to_string())?;
        let buf = guard.as_mut().ok_or("output buffer already handed over")?;
        gather::scatter(layout, &chunk, &dest, buf, &splits)
    });
    drop(held);
    match got {
        Some(Ok(())) => Ok(()),
        Some(Err(msg)) => Err(PyValueError::new_err(msg)),
        None => Err(PyRuntimeError::new_err(
            "replaykit native core: internal error (panic) in scatter_rows",
        )),
    }
}

/// `gather::plan` of a string column (`layout`, chunks as for `take_columns`) and an int64
/// `order` with no repeated row: `(offsets, dest, validity, null_count)`, int64 buffers of the
/// output offsets and of each source row's output byte position (-1: not taken).
#[pyfunction]
fn take_plan<'py>(
    py: Python<'py>,
    layout: &str,
    chunks: &Bound<'py, PyList>,
    order: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let layout = layout_of(layout)?;
    let mut held = Held(Vec::new());
    let mut raw: Vec<RawChunk> = Vec::new();
    for ch in chunks.iter() {
        let c = ch.cast::<PyTuple>()?;
        let offset: usize = c.get_item(0)?.extract()?;
        let len: usize = c.get_item(1)?.extract()?;
        let v = held.take(&c.get_item(2)?)?;
        let b1 = held.take(&c.get_item(3)?)?;
        let b2 = held.take(&c.get_item(4)?)?;
        raw.push((offset, len, v, b1, b2));
    }
    let order = held.take(order)?;
    if order.1 % 8 != 0 {
        return Err(PyValueError::new_err("order must be int64"));
    }
    let got = guarded(py, move || {
        // SAFETY: every pair comes from a buffer held by `held` until after this call
        let order = int64s(unsafe { sl(order) });
        let chunks: Vec<gather::Chunk<'_>> = raw
            .iter()
            .map(|&(offset, len, v, b1, b2)| unsafe {
                gather::Chunk {
                    offset,
                    len,
                    valid: valid(v),
                    b1: sl(b1),
                    b2: sl(b2),
                }
            })
            .collect();
        gather::plan(layout, &chunks, &order)
    });
    drop(held);
    let p = match got {
        Some(Ok(p)) => p,
        Some(Err(msg)) => return Err(PyValueError::new_err(msg)),
        None => {
            return Err(PyRuntimeError::new_err(
                "replaykit native core: internal error (panic) in take_plan",
            ))
        }
    };
    let v = match p.valid {
        Some(bits) => Some(buf(py, Storage::U8(bits))?),
        None => None,
    };
    (
        buf(py, Storage::I64(p.offsets))?,
        buf(py, Storage::I64(p.dest))?,
        v,
        p.nulls,
    )
        .into_pyobject(py)
}

/// The bytes of an output buffer, as a `NativeBuf` (the buffer is empty afterwards).
#[pyfunction]
fn out_bytes(py: Python<'_>, out: &Bound<'_, OutBuf>) -> PyResult<Py<NativeBuf>> {
    let v = out
        .get()
        .data
        .lock()
        .map_err(|_| PyRuntimeError::new_err("output buffer poisoned"))?
        .take()
        .ok_or_else(|| PyValueError::new_err("output buffer already handed over"))?;
    buf(py, Storage::U8(v))
}

/// The CPU features the core uses when present.
#[pyfunction]
fn cpu_features() -> Vec<&'static str> {
    let mut out = Vec::new();
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if std::is_x86_feature_detected!("sha") {
            out.push("sha");
        }
        if std::is_x86_feature_detected!("sse4.1") {
            out.push("sse4.1");
        }
        if std::is_x86_feature_detected!("avx2") {
            out.push("avx2");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("sha2") {
            out.push("sha2");
        }
        if std::arch::is_aarch64_feature_detected!("neon") {
            out.push("neon");
        }
    }
    out
}

/// Set the thread count of the kernels that take none (the toh and span scans, the pleach
/// derivation) and of those passed 0 (see `crate::par`): replaykit's thread setting,
/// `replaykit._base.native.threads()`. 0 goes back to the cores this process may use. Returns
/// the count in use before.
#[pyfunction]
fn set_threads(n: usize) -> usize {
    let before = crate::par::threads();
    crate::par::set_threads(n);
    before
}

/// The thread count the kernels use now (see `set_threads`).
#[pyfunction]
fn get_threads() -> usize {
    crate::par::threads()
}

/// Panics caught at the boundary since the module was loaded (tests assert 0).
#[pyfunction]
fn panics() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Scan Phoenix span exports in JSON Lines (`platform.rs`): `(ok, row_start, run_start, runs,
/// seq, line, columns)` as `scan_claude_code_files` returns them; `runs` a list of
/// `(run_id, created_at, attrs JSON text)`. Errors: a panic (a bug) is a `RuntimeError`;
/// the caller then reads every file with the reference.
#[pyfunction]
fn scan_phoenix_files<'py>(
    py: Python<'py>,
    paths: Vec<Vec<u8>>,
    names: Vec<String>,
    sources: Vec<String>,
    threads: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let paths = os_paths(&paths);
    let names = utf8_bytes(names);
    let sources = utf8_bytes(sources);
    let got = guarded(py, move || {
        crate::platform::scan_phoenix_files(&paths, &names, &sources, threads)
    })
    .ok_or_else(|| PyRuntimeError::new_err("scan_phoenix_files panicked"))?;
    let out = got.out;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let runs = PyList::empty(py);
    for (id, created, attrs) in &out.runs {
        runs.append((text(id), created.as_deref().map(text), text(attrs)))?;
    }
    let row_start = buf(py, Storage::I64(got.row_start))?;
    let run_start = buf(py, Storage::I64(got.run_start))?;
    let seq = buf(py, Storage::I64(out.seq))?;
    let line = buf(py, Storage::I64(out.line))?;
    let cols = PyList::empty(py);
    for (name, c) in [
        ("run_id", out.run_id),
        ("source", out.source),
        ("type", out.typ),
        ("kind", out.kind),
        ("ts", out.ts),
        ("event_id", out.event_id),
        ("ref_id", out.ref_id),
        ("tool_name", out.tool_name),
        ("args_hash", out.args_hash),
        ("finish", out.finish),
        ("text", out.text),
        ("payload", out.payload),
    ] {
        cols.append((name, str_col(py, c)?))?;
    }
    for (name, c) in [
        ("turn", out.turn),
        ("step", out.step),
        ("input_tokens", out.input_tokens),
        ("output_tokens", out.output_tokens),
    ] {
        cols.append((name, i64_col(py, c)?))?;
    }
    cols.append(("is_error", bool_col(py, out.is_error)?))?;
    (got.ok, row_start, run_start, runs, seq, line, cols).into_pyobject(py)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<NativeBuf>()?;
    m.add_function(wrap_pyfunction!(scan_pleach_block, m)?)?;
    m.add_function(wrap_pyfunction!(scan_toh_file, m)?)?;
    m.add_function(wrap_pyfunction!(scan_claude_code_files, m)?)?;
    m.add_function(wrap_pyfunction!(scan_codex_files, m)?)?;
    m.add_function(wrap_pyfunction!(scan_otlp_json, m)?)?;
    m.add_function(wrap_pyfunction!(sha256_many, m)?)?;
    m.add_function(wrap_pyfunction!(tool_args_many, m)?)?;
    m.add_function(wrap_pyfunction!(text_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(typed_payloads, m)?)?;
    m.add_function(wrap_pyfunction!(derive_pleach, m)?)?;
    m.add("EVENT_TYPES", pleach::EVENT_TYPES.to_vec())?;
    m.add_function(wrap_pyfunction!(chain_digests, m)?)?;
    m.add_function(wrap_pyfunction!(take_columns, m)?)?;
    m.add_class::<OutBuf>()?;
    m.add_function(wrap_pyfunction!(out_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_rows, m)?)?;
    m.add_function(wrap_pyfunction!(out_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(take_plan, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_features, m)?)?;
    m.add_function(wrap_pyfunction!(panics, m)?)?;
    m.add_function(wrap_pyfunction!(set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_threads, m)?)?;
    m.add_function(wrap_pyfunction!(scan_phoenix_files, m)?)?;
    Ok(())
}
