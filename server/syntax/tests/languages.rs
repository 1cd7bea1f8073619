//! Per-language fixtures: each `fixtures/<language>/sample.*` holds real-looking code with one
//! `$0` cursor marker; its tags, outline and symbol at the cursor are snapshots beside it
//! (`tags.txt`, `outline.txt`, `symbol.txt`; `UPDATE_EXPECT=1` rewrites them). Every language
//! must have a fixture, and every fixture must find definitions, calls, an outline with an
//! elided body, and a symbol around the cursor, so an empty query fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use tandem_syntax::{outline_items, render_outline, symbol_at, tags, Language, TagRole};

fn fixture(language: Language) -> (PathBuf, String, usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(language.name());
    let sample = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .find(|path| path.file_stem().is_some_and(|stem| stem == "sample"))
        .unwrap_or_else(|| panic!("no sample.* in {}", dir.display()));
    assert_eq!(
        Language::from_path(&sample),
        Some(language),
        "{} is not detected as {language}",
        sample.display()
    );
    let marked = std::fs::read_to_string(&sample).unwrap();
    let cursor = marked
        .find("$0")
        .unwrap_or_else(|| panic!("{} has no $0 cursor marker", sample.display()));
    (dir, marked.replacen("$0", "", 1), cursor)
}

fn check(language: Language) {
    let (dir, source, cursor) = fixture(language);
    let tree = tandem_syntax::parse(language, &source).unwrap();
    assert!(
        !tree.root_node().has_error(),
        "the {language} fixture has syntax errors: {}",
        tree.root_node().to_sexp()
    );

    let tags = tags(language, &tree, &source).unwrap();
    let rendered: String = tags
        .iter()
        .map(|tag| {
            format!(
                "{}\t{} {}\t{}\n",
                tag.line + 1,
                tag.role.short(),
                tag.kind,
                tag.name
            )
        })
        .collect();
    expect_file![dir.join("tags.txt")].assert_eq(&rendered);
    assert!(
        tags.iter().any(|tag| tag.role == TagRole::Definition),
        "{language}: no definitions"
    );
    assert!(
        tags.iter().any(|tag| tag.kind == "call"),
        "{language}: no call references"
    );

    let items = outline_items(language, &tree, &source).unwrap();
    let outline = render_outline(&items, &source);
    expect_file![dir.join("outline.txt")].assert_eq(&outline);
    assert!(
        outline.contains("… "),
        "{language}: the outline elides no body"
    );

    let symbol = symbol_at(language, &tree, &source, cursor, 2_000)
        .unwrap()
        .unwrap_or_else(|| panic!("{language}: no symbol at the cursor"));
    expect_file![dir.join("symbol.txt")].assert_eq(&format!(
        "{}\nlines {}-{}\n---\n{}",
        symbol.path(),
        symbol.start_line + 1,
        symbol.end_line + 1,
        symbol.text
    ));
}

macro_rules! languages {
    ($($test:ident => $language:ident),* $(,)?) => {
        $(#[test]
        fn $test() {
            check(Language::$language);
        })*

        #[test]
        fn every_language_has_a_fixture_test() {
            let tested = [$(Language::$language),*];
            for language in Language::ALL {
                assert!(tested.contains(&language), "{language} has no fixture test");
            }
        }
    };
}

languages! {
    rust => Rust,
    python => Python,
    javascript => JavaScript,
    typescript => TypeScript,
    tsx => Tsx,
    go => Go,
    java => Java,
    c => C,
    cpp => Cpp,
    ruby => Ruby,
    csharp => CSharp,
    bash => Bash,
    lua => Lua,
}
