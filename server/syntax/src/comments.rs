//! How comments are written in a language, by the editor's language id or else the file's
//! extension: for the comment an instruction is written in, and the context comments a
//! completion model is shown.

/// How a comment is opened and closed (`("//", "")`, `("<!--", " -->")`) in the language named
/// `language_id` (an LSP language id) or, when that is empty or `plaintext`, the language of
/// `path`'s extension. `None` when neither is known.
pub fn comment_syntax(language_id: &str, path: &str) -> Option<(&'static str, &'static str)> {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext)
        .unwrap_or_default();
    let key = if language_id.is_empty() || language_id == "plaintext" {
        extension
    } else {
        language_id
    };
    Some(match key.to_ascii_lowercase().as_str() {
        "rust" | "rs" | "c" | "h" | "cpp" | "cc" | "hpp" | "go" | "java" | "javascript" | "js"
        | "javascriptreact" | "jsx" | "typescript" | "ts" | "typescriptreact" | "tsx" | "swift"
        | "kotlin" | "kt" | "csharp" | "cs" | "scala" | "php" | "dart" | "zig" => ("//", ""),
        "python" | "py" | "ruby" | "rb" | "shellscript" | "sh" | "bash" | "zsh" | "fish"
        | "perl" | "pl" | "r" | "yaml" | "yml" | "toml" | "makefile" | "make" | "dockerfile"
        | "elixir" | "ex" | "exs" | "julia" | "jl" | "nim" | "powershell" | "ps1" | "cmake"
        | "coffeescript" | "tcl" | "gdscript" | "nix" | "crystal" | "cr" | "conf" | "ini"
        | "properties" => ("#", ""),
        "lua" | "sql" | "haskell" | "hs" | "elm" | "ada" | "adb" | "purescript" | "purs"
        | "vhdl" => ("--", ""),
        "lisp" | "scheme" | "scm" | "clojure" | "clj" | "racket" | "rkt" | "fennel" | "fnl"
        | "asm" | "nasm" => (";", ""),
        "emacs-lisp" | "elisp" | "el" => (";;", ""),
        "latex" | "tex" | "bibtex" | "erlang" | "erl" | "matlab" | "prolog" => ("%", ""),
        "html" | "htm" | "xml" | "svg" | "markdown" | "md" | "vue" | "svelte" | "xhtml" => {
            ("<!--", " -->")
        }
        "css" | "scss" | "less" => ("/*", " */"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_language_id_then_by_extension() {
        let cases = [
            ("rust", "", Some(("//", ""))),
            ("python", "a.rs", Some(("#", ""))),
            ("plaintext", "Makefile.toml", Some(("#", ""))),
            ("", "page.html", Some(("<!--", " -->"))),
            ("lua", "", Some(("--", ""))),
            ("plaintext", "notes.txt", None),
            ("cobol", "", None),
        ];
        for (language, path, expected) in cases {
            assert_eq!(
                comment_syntax(language, path),
                expected,
                "{language} {path}"
            );
        }
    }
}
