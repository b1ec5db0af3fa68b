use std::time::Instant;
fn main() {
    let files: Vec<Vec<u8>> = std::env::args()
        .skip(1)
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let total: usize = files.iter().map(|f| f.len()).sum();
    for _ in 0..2 {
        let t = Instant::now();
        let mut n = 0;
        for f in &files {
            n += _core::lines::objects(f).unwrap().len();
        }
        let a = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut valid = 0;
        for f in &files {
            for (_, l) in _core::lines::lines(f) {
                let mut s = _core::json::Scanner::new(l);
                if s.value(0).is_ok() {
                    valid += 1;
                }
            }
        }
        let c = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut rows = 0;
        for f in &files {
            rows += _core::transcripts::scan_claude_code(f, b"x").unwrap().len();
        }
        let b = t.elapsed().as_secs_f64();
        println!(
            "{} MB, {n} lines: validate {c:.3}s ({valid}) tree {a:.3}s, scan {b:.3}s ({rows} rows)",
            total >> 20
        );
    }
}
