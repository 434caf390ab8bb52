fn main() {
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).unwrap();
        match proflake::decode(&bytes, None) {
            Ok(d) => {
                let p = &d.profile;
                println!(
                    "== {path}: {:?} {:?} samples={} stats={:?}",
                    d.container,
                    p.timestamps,
                    p.samples().len(),
                    p.stats
                );
                for s in p.samples() {
                    let t = p.thread(s.thread);
                    let frames: Vec<String> = s
                        .stack
                        .map(|st| {
                            p.stack_frames(st)
                                .map(|f| {
                                    let f = p.frame(f);
                                    format!(
                                        "{}{}",
                                        p.opt_str(f.module)
                                            .map(|m| format!("{m}."))
                                            .unwrap_or_default(),
                                        p.opt_str(f.function).unwrap_or("?")
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    println!(
                        "  t={:?} pid={:?} tid={:?} cpu={:?} {:?} {:?}",
                        s.time,
                        p.process(t.process).pid,
                        t.tid,
                        s.cpu,
                        s.cpu_mode,
                        frames
                    );
                }
            }
            Err(e) => println!("== {path}: ERROR {e}"),
        }
    }
}
