//! The chat's colours, one place: the default on a colour terminal, and `plain` (no colour,
//! only bold, underline and reverse where they carry meaning) for `NO_COLOR` and `TERM=dumb`.

use ratatui::style::{Color, Modifier, Style};
use tandem_syntax::highlight::Highlight;

#[derive(Debug, Clone)]
pub struct Theme {
    pub color: bool,
    pub dim: Style,
    pub heading: Style,
    pub inline_code: Style,
    pub link: Style,
    pub quote: Style,
    pub user: Style,
    pub thought: Style,
    pub added: Style,
    pub removed: Style,
    pub hunk: Style,
    pub ok: Style,
    pub failed: Style,
    pub running: Style,
    pub warning: Style,
    pub error: Style,
    pub selected: Style,
    pub border: Style,
    pub accent: Style,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set (to anything but empty) or the terminal is dumb.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
        if no_color || dumb {
            Theme::plain()
        } else {
            Theme::colored()
        }
    }

    pub fn colored() -> Theme {
        let dim = Style::default().fg(Color::DarkGray);
        Theme {
            color: true,
            dim,
            heading: Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            inline_code: Style::default().fg(Color::Yellow),
            link: Style::default()
                .fg(Color::Blue)
                .add_modifier(Modifier::UNDERLINED),
            quote: dim,
            user: Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            thought: Style::default()
                .fg(Color::DarkGray)
                .add_modifier(Modifier::ITALIC),
            added: Style::default().fg(Color::Green),
            removed: Style::default().fg(Color::Red),
            hunk: Style::default().fg(Color::Cyan),
            ok: Style::default().fg(Color::Green),
            failed: Style::default().fg(Color::Red),
            running: Style::default().fg(Color::Cyan),
            warning: Style::default().fg(Color::Yellow),
            error: Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            selected: Style::default().add_modifier(Modifier::REVERSED),
            border: dim,
            accent: Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
        }
    }

    pub fn plain() -> Theme {
        let none = Style::default();
        let bold = Style::default().add_modifier(Modifier::BOLD);
        Theme {
            color: false,
            dim: none,
            heading: bold,
            inline_code: none,
            link: Style::default().add_modifier(Modifier::UNDERLINED),
            quote: none,
            user: bold,
            thought: none,
            added: none,
            removed: none,
            hunk: none,
            ok: none,
            failed: none,
            running: none,
            warning: none,
            error: bold,
            selected: Style::default().add_modifier(Modifier::REVERSED),
            border: none,
            accent: bold,
        }
    }

    /// How code of kind `highlight` is coloured.
    pub fn code(&self, highlight: Highlight) -> Style {
        if !self.color {
            return Style::default();
        }
        let color = match highlight {
            Highlight::Keyword => Color::Magenta,
            Highlight::String => Color::Green,
            Highlight::Comment => Color::DarkGray,
            Highlight::Function => Color::Blue,
            Highlight::Type => Color::Yellow,
            Highlight::Number | Highlight::Constant => Color::LightRed,
            Highlight::Property => Color::Cyan,
            Highlight::Operator | Highlight::Punctuation | Highlight::Variable => Color::Reset,
        };
        Style::default().fg(color)
    }
}
