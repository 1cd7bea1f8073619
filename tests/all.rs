//! Tandem's end-to-end suite: the real server driven like an editor drives it, in-process over a
//! duplex pipe and, in `stdio`, as the built `tandem` binary. One test binary, so the server is
//! compiled once; run it with `cargo test -p tandem --test all`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e {
    mod acp;
    mod agent;
    mod architecture;
    mod ask;
    mod attach;
    mod bad_input;
    mod chat;
    mod cli;
    mod commands;
    mod completions;
    mod context;
    mod demo;
    mod diagnostics;
    mod editor_agent;
    mod emacs;
    mod enterprise;
    mod first_run;
    mod headless;
    mod helix;
    mod hooks;
    mod images;
    mod lifecycle;
    mod mcp;
    mod next_speaker;
    mod npm;
    mod nvim;
    mod plugins;
    mod prompt_cache;
    mod providers;
    mod real_editor;
    mod release;
    mod replay;
    mod sandbox;
    mod save_before_commands;
    mod security;
    mod sessions;
    mod skills;
    mod small_window;
    mod stdio;
    mod subagents;
    mod sync;
    mod terminal;
    mod vscode;
    mod web_fetch;
}
