//! Issue: inline completions sent similar code from any open document (outside the workspace, dotfiles) to the completion model.

use serde_json::json;
use tandem_test_support::{FakeEditor, ModelServer};

use super::super::completions::{answer, settings};

/// Lines the document being completed ends with at the cursor, and that every other document
/// shares in part, so each would be shown as similar code.
const INVOICE: &str = "def print_invoice(orders):\n    for order in orders:\n        total = order.amount * order.quantity\n        \n";

/// A document more like the lines before the cursor than the ordinary one, with `marker`.
fn closer(marker: &str) -> String {
    format!(
        "def print_receipt(orders):\n    for order in orders:\n        total = order.amount * order.quantity\n        {marker} = total\n"
    )
}

/// Finding 6 of the second review: the similar code of other open documents of the same
/// language went to the completion model whatever they were — a file outside the workspace,
/// `.env.py`. Now only the workspace's ordinary files are shown: not one outside it, not a
/// secret-looking one, not one `.gitignore` leaves out, not one `excludeDocuments` names; and a
/// secret-looking document gets no completions at all.
#[tokio::test]
async fn completions_sent_other_documents_outside_the_workspace_and_dotenv_files() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "print(total)"));
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .settings(settings(
            &model,
            "completions",
            json!({"excludeDocuments": ["legacy/**"]}),
        ))
        .start()
        .await;
    editor.write_file(".gitignore", "build/\n");

    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("elsewhere.py");
    let text = closer("OUTSIDE_MARKER");
    std::fs::write(&elsewhere, &text).unwrap();
    editor
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {
                "uri": format!("file://{}", elsewhere.display()),
                "languageId": "python",
                "version": 1,
                "text": text,
            }}),
        )
        .await;
    let dotenv = editor
        .open(
            ".env.py",
            &format!("API_KEY = 'sk-live-secret'\n{}", closer("ENV_MARKER")),
        )
        .await;
    editor
        .open("build/generated.py", &closer("IGNORED_MARKER"))
        .await;
    editor
        .open("legacy/old.py", &closer("EXCLUDED_MARKER"))
        .await;
    editor
        .open(
            "src/orders.py",
            "def summarize(orders):\n    for order in orders:\n        print(order.amount)  # ORDINARY_MARKER\n",
        )
        .await;
    let uri = editor.open("src/invoice.py", INVOICE).await;

    let result = editor.request_inline_completion(&uri, 3, 8).await;
    assert_eq!(result["items"][0]["insertText"], "print(total)");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let prompt = requests[0].json()["prompt"].as_str().unwrap().to_owned();
    assert!(
        prompt
            .starts_with("# Compare this snippet from src/orders.py:\n# def summarize(orders):\n"),
        "{prompt}"
    );
    for withheld in [
        "OUTSIDE_MARKER",
        "elsewhere.py",
        "ENV_MARKER",
        "sk-live-secret",
        "IGNORED_MARKER",
        "EXCLUDED_MARKER",
        "print_receipt",
    ] {
        assert!(!prompt.contains(withheld), "{withheld} was sent:\n{prompt}");
    }

    // Nothing at all is asked in a secret-looking document.
    let result = editor.request_inline_completion(&dotenv, 3, 8).await;
    assert_eq!(result, serde_json::Value::Null);
    assert_eq!(model.requests().len(), 1);
}
