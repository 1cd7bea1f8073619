//! `tandem-confine`: the OS sandbox's launcher on its own (`tandem_agent::confine::launch`),
//! installed beside `tandem`, which starts every confined command through it. It does what
//! `tandem __sandbox` does, but a small binary starts in a fraction of the time the whole of
//! Tandem takes to load, and it runs once per command (docs/benchmarks.md, "The OS sandbox").

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // Called as `tandem-confine __sandbox …`, the same words as `tandem __sandbox …`.
    let args = match args.split_first() {
        Some((first, rest)) if first == tandem_agent::confine::LAUNCH_ARG => rest,
        _ => &args[..],
    };
    std::process::exit(tandem_agent::confine::launch(args));
}
