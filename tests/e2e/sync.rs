//! Document sync through the real server: a randomised differential test against the plain
//! reference model, and the awkward cases one at a time.

use serde_json::{json, Value};
use tandem_test_support::reference::{random_edit, Encoding, ReferenceDoc};
use tandem_test_support::{start_in_process, InProcessServer};

const URI: &str = "file:///project/notes.txt";

/// Steps per encoding; `TANDEM_SYNC_STEPS` raises it for a longer soak.
fn steps() -> usize {
    std::env::var("TANDEM_SYNC_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

/// The seed comes from `TANDEM_SYNC_SEED` when set, so a failure can be replayed exactly.
fn seed(default: u64) -> u64 {
    std::env::var("TANDEM_SYNC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

async fn opened(encoding: &str, text: &str) -> InProcessServer {
    let mut server = start_in_process();
    let result = server.client.initialize(&[encoding]).await;
    assert_eq!(result["capabilities"]["positionEncoding"], encoding);
    server.client.did_open(URI, 1, text).await;
    server
}

async fn differential(encoding: Encoding, default_seed: u64) {
    let seed = seed(default_seed);
    let mut rng = fastrand::Rng::with_seed(seed);
    let initial = "fn main() {\r\n    println!(\"héllo 😀\");\r}\n中文\u{2028}line\n";
    let mut server = opened(encoding.lsp_name(), initial).await;
    let mut reference = ReferenceDoc::new(initial);
    for step in 0..steps() {
        // Usually one change per notification, sometimes a batch applied in order.
        let batch = if rng.u8(..10) == 0 {
            rng.usize(2..5)
        } else {
            1
        };
        let mut changes = Vec::new();
        for _ in 0..batch {
            let edit = random_edit(&mut rng, &reference, encoding);
            reference.apply(&edit, encoding);
            changes.push(edit);
        }
        let version = i32::try_from(step).unwrap() + 2;
        let payload: Vec<Value> = changes.iter().map(|c| c.to_lsp_json()).collect();
        server
            .client
            .did_change(URI, version, Value::Array(payload))
            .await;
        let held = server.client.document(URI).await.unwrap();
        assert!(
            held["text"] == reference.text.as_str()
                && held["lineCount"] == reference.line_count()
                && held["version"] == version,
            "{encoding:?} diverged at step {step} (replay with TANDEM_SYNC_SEED={seed})\n\
             changes: {changes:?}\nserver: {held}\nreference: {:?} ({} lines)",
            reference.text,
            reference.line_count(),
        );
    }
}

#[tokio::test]
async fn differential_sync_utf8() {
    differential(Encoding::Utf8, 8).await;
}

#[tokio::test]
async fn differential_sync_utf16() {
    differential(Encoding::Utf16, 16).await;
}

#[tokio::test]
async fn differential_sync_utf32() {
    differential(Encoding::Utf32, 32).await;
}

/// A `didChange` with one ranged change.
async fn replace(server: &mut InProcessServer, version: i32, range: Value, text: &str) {
    let change = json!([{"range": range, "text": text}]);
    server.client.did_change(URI, version, change).await;
}

fn range(sl: u32, sc: u32, el: u32, ec: u32) -> Value {
    json!({"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}})
}

#[tokio::test]
async fn debug_document_reports_what_is_held() {
    let mut server = opened("utf-16", "a\r\nb\rc\n").await;
    let held = server.client.document(URI).await.unwrap();
    assert_eq!(
        held,
        json!({"version": 1, "text": "a\r\nb\rc\n", "positionEncoding": "utf-16", "lineCount": 4, "languageId": "plaintext"})
    );
}

#[tokio::test]
async fn bytes_are_stored_verbatim() {
    let text = "\u{feff}mixed\r\nbreaks\rand\ntabs\t\u{0}nul and \u{2028} separators\r\n";
    let mut server = opened("utf-16", text).await;
    replace(&mut server, 2, range(1, 0, 1, 0), "\r\n").await;
    let expected = text.replacen("\r\nbreaks", "\r\n\r\nbreaks", 1);
    assert_eq!(server.client.document(URI).await.unwrap()["text"], expected);
}

#[tokio::test]
async fn out_of_range_positions_clamp() {
    let mut server = opened("utf-16", "ab\ncd").await;
    // Past the end of line 0 means its end; past the last line means the end of the document.
    replace(&mut server, 2, range(0, 99, 0, 120), "!").await;
    replace(&mut server, 3, range(40, 0, 50, 7), "?").await;
    assert_eq!(
        server.client.document(URI).await.unwrap()["text"],
        "ab!\ncd?"
    );
}

#[tokio::test]
async fn utf16_position_inside_surrogate_pair_snaps_back() {
    let mut server = opened("utf-16", "a😀b").await;
    replace(&mut server, 2, range(0, 2, 0, 2), "|").await;
    assert_eq!(server.client.document(URI).await.unwrap()["text"], "a|😀b");
}

#[tokio::test]
async fn reversed_range_is_applied_swapped_with_a_warning() {
    let mut server = opened("utf-16", "hello world").await;
    replace(&mut server, 2, range(0, 11, 0, 5), "").await;
    server.client.expect_log("end precedes its start").await;
    assert_eq!(server.client.document(URI).await.unwrap()["text"], "hello");
}

#[tokio::test]
async fn version_going_backwards_is_refused_with_a_warning() {
    let mut server = opened("utf-16", "abc").await;
    replace(&mut server, 5, range(0, 0, 0, 0), "1").await;
    replace(&mut server, 4, range(0, 0, 0, 0), "STALE").await;
    let log = server
        .client
        .expect_log("older than the stored version")
        .await;
    assert_eq!(log["params"]["type"], 2, "a warning");
    let held = server.client.document(URI).await.unwrap();
    assert_eq!(
        (held["text"].as_str(), held["version"].as_i64()),
        (Some("1abc"), Some(5))
    );
}

#[tokio::test]
async fn did_change_before_did_open_is_ignored_with_a_warning() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    replace(&mut server, 2, range(0, 0, 0, 0), "x").await;
    server.client.expect_log("is not open").await;
    assert_eq!(
        server.client.document(URI).await.unwrap_err()["code"],
        -32602
    );
    // The server is still fine: a later open works.
    server.client.did_open(URI, 1, "now").await;
    assert_eq!(server.client.document(URI).await.unwrap()["text"], "now");
}

#[tokio::test]
async fn full_document_change_replaces_text() {
    let mut server = opened("utf-8", "old").await;
    server
        .client
        .did_change(
            URI,
            2,
            json!([{"range": range(0, 0, 0, 0), "text": ">"}, {"text": "new\r\n"}, {"range": range(1, 0, 1, 0), "text": "tail"}]),
        )
        .await;
    assert_eq!(
        server.client.document(URI).await.unwrap()["text"],
        "new\r\ntail"
    );
}

#[tokio::test]
async fn close_forgets_the_document() {
    let mut server = opened("utf-16", "x").await;
    server
        .client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(
        server.client.document(URI).await.unwrap_err()["code"],
        -32602
    );
    server
        .client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    server.client.expect_log("is not open").await;
}

/// Handlers run concurrently; sync must still apply in arrival order. Many changes sent back to
/// back, then one read, must see all of them in order.
#[tokio::test]
async fn burst_of_changes_applies_in_order() {
    let mut server = opened("utf-16", "").await;
    let mut expected = String::new();
    for i in 0..2_000u32 {
        let ch = char::from(b'a' + u8::try_from(i % 26).unwrap());
        expected.push(ch);
        server
            .client
            .did_change(
                URI,
                i32::try_from(i).unwrap() + 2,
                json!([{"range": range(0, i, 0, i), "text": ch.to_string()}]),
            )
            .await;
    }
    assert_eq!(server.client.document(URI).await.unwrap()["text"], expected);
}

/// A 50 MB document opens, and its edits land exactly where their UTF-16 positions say: the
/// whole text the server holds is compared, not only its length and line count.
#[tokio::test]
async fn fifty_megabyte_document_opens_and_edits() {
    let line = "0123456789abcdefghijklmnopqrstuvwxyz héllo wörld 😀 end of line\n";
    let text = line.repeat(50 * 1024 * 1024 / line.len() + 1);
    assert!(text.len() >= 50 * 1024 * 1024);
    let mut server = opened("utf-16", &text).await;
    let line_count = text.len() / line.len();
    // In the middle, after é, ö and 😀: UTF-16 counts 52 units before "end", where UTF-8 counts
    // 56 bytes and UTF-32 51 chars, so an edit placed in the wrong encoding lands elsewhere.
    let middle = line_count / 2;
    let last = line_count - 1;
    replace(
        &mut server,
        2,
        range(
            u32::try_from(middle).unwrap(),
            52,
            u32::try_from(middle).unwrap(),
            55,
        ),
        "END",
    )
    .await;
    replace(
        &mut server,
        3,
        range(
            u32::try_from(last).unwrap(),
            0,
            u32::try_from(last).unwrap(),
            4,
        ),
        "ZZ",
    )
    .await;

    // The expected text, by byte arithmetic on the repeated line alone.
    let end_at = middle * line.len() + line.find("end").unwrap();
    let last_at = last * line.len();
    let mut expected = text.clone();
    expected.replace_range(last_at..last_at + 4, "ZZ");
    expected.replace_range(end_at..end_at + 3, "END");

    let held = server.client.document(URI).await.unwrap();
    let held_text = held["text"].as_str().unwrap();
    // The text around each edit first, so that a misplaced edit shows where it went.
    let around = |text: &str, at: usize| text[at - line.len()..at + line.len()].to_owned();
    assert_eq!(around(held_text, end_at), around(&expected, end_at));
    assert_eq!(
        &held_text[last_at - line.len()..],
        &expected[last_at - line.len()..]
    );
    assert!(
        held_text == expected,
        "the held text differs from the expected text elsewhere"
    );
    assert_eq!(held["lineCount"], line_count + 1);
    assert_eq!(held["version"], 3);
}
