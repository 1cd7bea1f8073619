//! The chat on a real terminal: raw mode, the alternate screen and bracketed paste for as long
//! as it runs (restored however it ends, a panic included), and the event loop: keys, the
//! agent's messages and finished requests change the app, and a frame is drawn when something
//! changed, at most one every 16 ms, so a fast stream costs frames, not keystrokes.

use std::io::{self, Stdout, Write};
use std::time::Duration;

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, EventStream};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::ExecutableCommand;
use futures::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::app::App;
use crate::client::{self, Connection, FromAgent};
use crate::theme::Theme;
use crate::{ui, ChatError, ChatOptions, Result, Start};

/// The shortest time between two frames.
pub const FRAME: Duration = Duration::from_millis(16);
/// How often the spinner and the elapsed time move.
const TICK: Duration = Duration::from_millis(100);

/// Puts the terminal back as it was when dropped.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> Result<Screen> {
        enable_raw_mode()?;
        let mut stdout = io::stdout();
        stdout.execute(EnterAlternateScreen)?;
        stdout.execute(EnableBracketedPaste)?;
        // A panic leaves the terminal usable, and its message readable.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        let terminal = Terminal::new(CrosstermBackend::new(stdout))?;
        Ok(Screen { terminal })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
        let _ = self.terminal.show_cursor();
    }
}

fn restore() {
    let mut stdout = io::stdout();
    let _ = stdout.execute(DisableBracketedPaste);
    let _ = stdout.execute(LeaveAlternateScreen);
    let _ = disable_raw_mode();
    let _ = stdout.flush();
}

pub(crate) async fn run(
    connection: Connection,
    mut agent: mpsc::UnboundedReceiver<FromAgent>,
    options: &ChatOptions,
    start: Start,
    attached: Option<String>,
) -> Result<i32> {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut app = App::new(
        connection.clone(),
        options.workspace.clone(),
        Theme::from_env(),
        done_tx,
    );
    app.attached = attached;
    match start {
        Start::New => {
            let response = client::new_session(&connection, options.workspace.clone()).await?;
            app.start_session(response.session_id, response.config_options);
        }
        Start::Load(id) => app.load(id),
    }
    if let Some(prompt) = &options.prompt {
        app.composer.set(prompt);
        app.submit();
    }
    let mut screen = Screen::enter()?;
    let mut events = EventStream::new();
    let closed = connection.incoming_closed();
    tokio::pin!(closed);
    let mut tick = tokio::time::interval(TICK);
    let mut dirty = true;
    let mut next_frame = Instant::now();
    let mut gone = false;
    loop {
        if dirty && Instant::now() >= next_frame {
            screen.terminal.draw(|frame| ui::draw(frame, &mut app))?;
            dirty = false;
            next_frame = Instant::now() + FRAME;
        }
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => {
                    app.on_terminal(event);
                    dirty = true;
                }
                Some(Err(error)) => return Err(ChatError::Terminal(error)),
                None => break,
            },
            Some(message) = agent.recv() => {
                app.on_agent(message);
                dirty = true;
            }
            Some(done) = done_rx.recv() => {
                app.on_done(done);
                dirty = true;
            }
            () = &mut closed => {
                gone = true;
                break;
            }
            _ = tick.tick() => {
                if app.turn.is_some() {
                    dirty = true;
                }
            }
            () = tokio::time::sleep_until(next_frame), if dirty => {}
        }
        if app.exit.is_some() {
            break;
        }
    }
    drop(screen);
    if gone {
        let message = match &app.attached {
            Some(editor) => format!(
                "tandem: {editor}'s Tandem server has gone (the editor closed?); the chat ended"
            ),
            None => "tandem: the agent stopped; the chat ended".to_owned(),
        };
        eprintln!("{message}");
        return Ok(1);
    }
    if let (true, Some(id), None) = (app.used, &app.session, &app.attached) {
        eprintln!(
            "session {} saved; continue it with: tandem chat --resume {}",
            id.0, id.0
        );
    }
    Ok(app.exit.unwrap_or(0))
}
