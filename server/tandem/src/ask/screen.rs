//! Where `tandem ask` writes: stdout (the answer) and stderr (tool activity), each a terminal or
//! not. On a terminal the layout is kept here: blocks (the answer, activity lines, the diff
//! summary) start on their own line with exactly one blank line between blocks of different
//! kinds, styled when colour is allowed, and the spinner is drawn and erased in place. When both
//! streams are terminals they are taken to be the same screen, so one cursor column is tracked
//! across them: that is what keeps a tool line on stderr off the end of the answer's line on
//! stdout. A stream that is not a terminal gets plain text, exactly as it always did.

use std::io::{self, Write};

use crossterm::queue;
use crossterm::style::{Print, Stylize};
use crossterm::terminal::{Clear, ClearType};

/// One of the two streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// The answer (and, on a terminal, the diff summary).
    Out,
    /// Activity: tool lines, retries, notes.
    Err,
}

/// The kinds of block that are kept apart by a blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    Answer,
    Activity,
    Summary,
}

/// How a piece of a line is drawn when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Dim,
    Bold,
    Green,
    Red,
    Cyan,
}

/// A line's pieces, each with its style; the line break is not part of it.
pub(crate) type Line = Vec<(String, Style)>;

/// What a stream is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tty {
    /// A terminal: the layout rules apply.
    pub terminal: bool,
    /// Colour and other styles may be written (a terminal, `NO_COLOR` unset or empty, and a
    /// `TERM` other than `dumb`).
    pub colour: bool,
    /// The cursor can be moved back over a line, which the spinner needs (a terminal whose
    /// `TERM` is not `dumb`).
    pub cursor: bool,
}

impl Tty {
    /// Not a terminal: plain text, no spinner.
    pub const PIPE: Tty = Tty {
        terminal: false,
        colour: false,
        cursor: false,
    };

    /// A stream that is (`terminal`) or is not a terminal, under the environment's `NO_COLOR`
    /// and `TERM` (no-color.org: a non-empty `NO_COLOR` turns colour off).
    pub fn detect(terminal: bool) -> Tty {
        let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        let dumb = set("TERM").is_some_and(|term| term == "dumb");
        Tty {
            terminal,
            colour: terminal && !dumb && set("NO_COLOR").is_none(),
            cursor: terminal && !dumb,
        }
    }
}

/// What was last written where one cursor moves (a stream, or both streams of one terminal).
#[derive(Debug, Default)]
struct Place {
    /// Anything was written.
    written: bool,
    /// Line breaks at the end of what was written (0: the cursor is mid-line).
    newlines: usize,
    /// The kind of the last block written.
    last: Option<Block>,
}

/// The two streams and what is known of each.
pub(crate) struct Screen {
    out: Box<dyn Write>,
    err: Box<dyn Write>,
    out_tty: Tty,
    err_tty: Tty,
    /// Both streams are terminals: one screen, one cursor (`places[0]`).
    shared: bool,
    places: [Place; 2],
    /// A spinner frame is on stderr's current line.
    spinning: bool,
    /// The first failure to write stdout; later writes there are skipped.
    pub write_error: Option<io::Error>,
}

impl Screen {
    pub fn new(out: Box<dyn Write>, out_tty: Tty, err: Box<dyn Write>, err_tty: Tty) -> Screen {
        Screen {
            out,
            err,
            out_tty,
            err_tty,
            shared: out_tty.terminal && err_tty.terminal,
            places: Default::default(),
            spinning: false,
            write_error: None,
        }
    }

    pub fn tty(&self, stream: Stream) -> Tty {
        match stream {
            Stream::Out => self.out_tty,
            Stream::Err => self.err_tty,
        }
    }

    fn place(&mut self, stream: Stream) -> &mut Place {
        let index = match stream {
            Stream::Err if !self.shared => 1,
            _ => 0,
        };
        &mut self.places[index]
    }

    /// Whether the last block written where `stream` writes was of kind `block`.
    pub fn continues(&mut self, stream: Stream, block: Block) -> bool {
        self.place(stream).last == Some(block)
    }

    /// Starts a block of kind `block` on `stream`: on a terminal, the line written so far is
    /// ended, and a blank line separates it from a block of another kind (or, with
    /// `paragraph`, from an answer paragraph before it). Nothing is added before the first
    /// block, nor anywhere on a stream that is not a terminal.
    pub fn begin(&mut self, stream: Stream, block: Block, paragraph: bool) {
        if !self.tty(stream).terminal {
            return;
        }
        let place = self.place(stream);
        let want: usize = match (place.last, block) {
            (None, _) => 0,
            (Some(Block::Activity), Block::Activity) => 1,
            (Some(Block::Answer), Block::Answer) if !paragraph => 0,
            _ => 2,
        };
        let missing = want.saturating_sub(place.newlines);
        place.last = Some(block);
        if missing > 0 {
            self.write(stream, &"\n".repeat(missing), &[]);
        }
    }

    /// Writes `text` as it is (the answer's own text) on `stream`.
    pub fn text(&mut self, stream: Stream, text: &str) {
        self.write(stream, text, &[]);
    }

    /// Writes `lines` on `stream`, each with a line break, styled when colour is on.
    pub fn lines(&mut self, stream: Stream, lines: &[Line]) {
        let colour = self.tty(stream).colour;
        let (mut plain, mut styled) = (String::new(), String::new());
        for line in lines {
            for (text, style) in line {
                plain.push_str(text);
                if colour {
                    styled.push_str(&paint(text, *style));
                }
            }
            plain.push('\n');
            if colour {
                styled.push('\n');
            }
        }
        self.write(stream, &plain, styled.as_bytes());
    }

    /// A block of `lines` on `stream`: `begin` and `lines`.
    pub fn block(&mut self, stream: Stream, block: Block, lines: &[Line]) {
        self.begin(stream, block, false);
        self.lines(stream, lines);
    }

    /// Writes `plain` (or, when not empty, `styled`, which draws the same text) and flushes;
    /// what is written is noted where the stream's cursor is.
    fn write(&mut self, stream: Stream, plain: &str, styled: &[u8]) {
        self.erase_spinner();
        let bytes = if styled.is_empty() {
            plain.as_bytes()
        } else {
            styled
        };
        match stream {
            Stream::Out => {
                if self.write_error.is_some() {
                    return;
                }
                let out = &mut self.out;
                if let Err(error) = out.write_all(bytes).and_then(|()| out.flush()) {
                    self.write_error = Some(error);
                    return;
                }
            }
            // Like `eprintln!`, less the panic: a stderr that cannot be written is not a
            // reason to stop the turn.
            Stream::Err => {
                let err = &mut self.err;
                let _ = err.write_all(bytes).and_then(|()| err.flush());
            }
        }
        let place = self.place(stream);
        if plain.is_empty() {
            return;
        }
        place.written = true;
        let trailing = plain.len() - plain.trim_end_matches('\n').len();
        place.newlines = if trailing == plain.len() {
            place.newlines + trailing
        } else {
            trailing
        };
    }

    /// Draws `frame` (one short line, no line break) over stderr's current line, when stderr is
    /// a terminal that can take it back and its cursor is at the start of a line (never over
    /// the answer's last line).
    pub fn spin(&mut self, frame: &str) {
        if !self.err_tty.cursor {
            return;
        }
        let place = self.place(Stream::Err);
        if place.written && place.newlines == 0 {
            return;
        }
        let frame = if self.err_tty.colour {
            paint(frame, Style::Dim)
        } else {
            frame.to_owned()
        };
        let err = &mut self.err;
        let _ = queue!(
            err,
            Print('\r'),
            Clear(ClearType::CurrentLine),
            Print(frame)
        )
        .and_then(|()| err.flush());
        self.spinning = true;
    }

    /// Takes the spinner's frame off the screen, if one is there.
    pub fn erase_spinner(&mut self) {
        if std::mem::take(&mut self.spinning) {
            let err = &mut self.err;
            let _ =
                queue!(err, Print('\r'), Clear(ClearType::CurrentLine)).and_then(|()| err.flush());
        }
    }
}

/// `text` drawn in `style`; the colours are the terminal palette's first eight (the ones its
/// theme sets, readable on a light background as on a dark one).
fn paint(text: &str, style: Style) -> String {
    match style {
        Style::Plain => text.to_owned(),
        Style::Dim => text.dim().to_string(),
        Style::Bold => text.bold().to_string(),
        Style::Green => text.dark_green().to_string(),
        Style::Red => text.dark_red().to_string(),
        Style::Cyan => text.dark_cyan().to_string(),
    }
}

/// A line of one piece.
pub(crate) fn line(text: impl Into<String>, style: Style) -> Line {
    vec![(text.into(), style)]
}
