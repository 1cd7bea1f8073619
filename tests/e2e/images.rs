//! Images, from the editor to the model server: a screenshot attached to `tandem/prompt`, then
//! an image the model opens with `view_image`, each reaching the scripted model in the wire's
//! own shape; the saved session keeps them as files beside it (not as base64 in its lines) and a
//! resumed session sends them again. A model that takes no images refuses a prompt with one,
//! before any request, and is not offered `view_image`.

use std::io::Cursor;

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};

/// A PNG of `width`×`height` pixels, in a pattern that does not compress to nothing.
fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x * 7 % 256) as u8,
            (y * 13 % 256) as u8,
            ((x ^ y) % 256) as u8,
        ])
    });
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The data URLs of the images in an OpenAI Chat Completions request body.
fn image_urls(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "image_url")
        .filter_map(|part| part["image_url"]["url"].as_str().map(str::to_owned))
        .collect()
}

async fn prompt(editor: &FakeEditor, params: Value) -> (String, Value) {
    let started = editor.request("tandem/prompt", params).await.unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    (started["sessionId"].as_str().unwrap().to_owned(), finished)
}

#[tokio::test]
async fn a_pasted_screenshot_and_a_viewed_image_reach_the_model_and_are_saved_by_reference() {
    let model = ModelServer::start().await;
    let state = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = scripted_settings(&model, json!({"approval": {"mode": "yolo"}}));
    settings["models"]["scripted"]["images"] = json!(true);
    let start = || {
        FakeEditor::rich()
            .settings(settings.clone())
            .state_dir(state.path())
            .workspace(workspace.path())
            .start()
    };
    let editor = start().await;
    // A 3000×1000 diagram: over the long-edge cap, so it is scaled to 1568×523.
    std::fs::write(editor.root().join("diagram.png"), png(3000, 1000)).unwrap();
    let screenshot = png(64, 32);

    model.push(Reply::openai_tool_calls(&[(
        "call_1",
        "view_image",
        json!({"path": "diagram.png"}),
    )]));
    model.push(Reply::openai_text("The diagram shows the same layout."));
    let (session, finished) = prompt(
        &editor,
        json!({
            "text": "Does the screenshot match the diagram?",
            "context": [{"mimeType": "image/png", "data": base64(&screenshot)}],
        }),
    )
    .await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished:#}");

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2);
    // `view_image` is offered to a model that takes images.
    assert!(requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|tool| tool["function"]["name"] == "view_image"));
    // The screenshot goes as it was pasted: small enough to need nothing done to it.
    assert_eq!(
        image_urls(&requests[0]),
        vec![format!("data:image/png;base64,{}", base64(&screenshot))]
    );
    // The viewed image follows its call's result, in a user message of its own (Chat
    // Completions' tool messages take only text), scaled down.
    let messages = requests[1]["messages"].as_array().unwrap();
    let tool = messages
        .iter()
        .position(|message| message["role"] == "tool")
        .unwrap();
    assert_eq!(
        messages[tool]["content"],
        "diagram.png (1568×523 PNG) is shown below."
    );
    assert_eq!(messages[tool + 1]["role"], "user");
    let urls = image_urls(&requests[1]);
    assert_eq!(urls.len(), 2, "{urls:?}");
    let viewed = urls[1].strip_prefix("data:image/png;base64,").unwrap();
    let viewed = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(viewed)
            .unwrap()
    };
    assert_eq!(
        image::load_from_memory(&viewed).unwrap().width(),
        1568,
        "scaled to the long-edge cap"
    );
    editor.shutdown().await;

    // Saved by reference: the session's lines hold no base64 of either image, the images
    // folder beside them holds both as the files they are.
    let saved: Vec<std::path::PathBuf> = walk(state.path());
    let log = saved
        .iter()
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        !text.contains(&base64(&screenshot)),
        "the screenshot is inline"
    );
    assert!(text.len() < 200_000, "{} bytes", text.len());
    let images: Vec<&std::path::PathBuf> = saved
        .iter()
        .filter(|path| {
            path.parent()
                .is_some_and(|dir| dir.extension().is_some_and(|ext| ext == "images"))
        })
        .collect();
    assert_eq!(images.len(), 2, "{saved:?}");
    assert!(images
        .iter()
        .any(|path| std::fs::read(path).unwrap() == screenshot));

    // A resumed session sends both images again, read back from their files.
    let editor = start().await;
    editor
        .request("tandem/resumeSession", json!({"sessionId": session}))
        .await
        .unwrap();
    model.push(Reply::openai_text("Yes."));
    let (_, finished) = prompt(&editor, json!({"sessionId": session, "text": "Sure?"})).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished:#}");
    let requests = model.chat_requests();
    assert_eq!(image_urls(&requests[2]), urls);
    editor.shutdown().await;
}

#[tokio::test]
async fn a_model_that_takes_no_images_refuses_the_prompt_before_any_request() {
    let model = ModelServer::start().await;
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let (_, finished) = prompt(
        &editor,
        json!({
            "text": "What is this?",
            "context": [{"mimeType": "image/png", "data": base64(&png(4, 4))}],
        }),
    )
    .await;
    assert_eq!(finished["stopReason"], "error", "{finished:#}");
    let message = finished["message"].as_str().unwrap();
    assert!(
        message.contains("the model in use (m) does not take images")
            && message.contains("\"images\": true"),
        "{message}"
    );
    assert_eq!(model.request_count(), 0);

    // The prompt without the image goes through, and the model is not offered view_image.
    model.push(Reply::openai_text("A question."));
    let (_, finished) = prompt(&editor, json!({"text": "What is this?"})).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished:#}");
    let request = &model.chat_requests()[0];
    assert!(!request.to_string().contains("view_image"));
    assert!(!request.to_string().contains("image_url"));

    // What is no image is refused at once, as bad parameters.
    let error = editor
        .request(
            "tandem/prompt",
            json!({"text": "Look", "context": [{"mimeType": "image/png", "data": "bm90IGFuIGltYWdl"}]}),
        )
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not a PNG, JPEG, GIF or WebP image"),
        "{error}"
    );
    editor.shutdown().await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
