//! The `view_image` tool: shows the model an image file from the workspace (a screenshot, a
//! diagram, a rendered page), for models that take images. Also `prepare`, which brings any
//! image (this tool's, a screenshot pasted into a prompt) to what every provider accepts: PNG,
//! JPEG, GIF or WebP, at most `MAX_EDGE` pixels on its long side and `MAX_BYTES` bytes, scaled
//! down (and re-encoded) only when it is over either.

use std::io::Cursor;

use base64::Engine;
use futures::future::BoxFuture;
use image::{GenericImageView, ImageFormat, ImageReader, Limits};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tandem_protocol::{Location, ToolKind};
use tandem_providers::{Image, ImageData};

use crate::read_file::check_is_file;
use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};

/// The long side an image is brought down to: Anthropic's recommended largest (about 1.15
/// megapixels when square, some 1,600 tokens); larger images are scaled down by the providers
/// anyway, after their bytes were sent.
pub const MAX_EDGE: u32 = 1568;
/// The most bytes an image is sent with: Anthropic refuses an image over 5 MB of base64.
pub const MAX_BYTES: usize = 3_750_000;
/// The largest file `view_image` reads.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Decoding stops past these: a small file can claim a huge canvas (a decompression bomb).
const MAX_DECODED_EDGE: u32 = 20_000;
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// Why an image cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("not a PNG, JPEG, GIF or WebP image")]
    UnknownFormat,
    #[error("the image cannot be decoded: {0}")]
    Undecodable(String),
    #[error("the image data is not base64: {0}")]
    NotBase64(String),
}

/// An image a front end received as base64 (a pasted screenshot), as `prepare` brings it.
/// The format is read from the bytes, whatever the sender called it.
pub fn from_base64(data: &str) -> Result<Image, ImageError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|error| ImageError::NotBase64(error.to_string()))?;
    prepare(&bytes)
}

/// `bytes` as an image every provider takes: as they are when the image is small enough,
/// else scaled to fit `MAX_EDGE` and re-encoded (PNG, or JPEG for photographs and for what is
/// still too large as PNG).
pub fn prepare(bytes: &[u8]) -> Result<Image, ImageError> {
    let format = image::guess_format(bytes).map_err(|_| ImageError::UnknownFormat)?;
    let media_type = match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => return Err(ImageError::UnknownFormat),
    };
    let undecodable = |error: image::ImageError| ImageError::Undecodable(error.to_string());
    let reader = || {
        let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
        let mut limits = Limits::default();
        limits.max_image_width = Some(MAX_DECODED_EDGE);
        limits.max_image_height = Some(MAX_DECODED_EDGE);
        limits.max_alloc = Some(MAX_DECODE_ALLOC);
        reader.limits(limits);
        reader
    };
    let (width, height) = reader().into_dimensions().map_err(undecodable)?;
    if width.max(height) <= MAX_EDGE && bytes.len() <= MAX_BYTES {
        return Ok(Image {
            media_type: media_type.to_owned(),
            data: ImageData::new(base64::engine::general_purpose::STANDARD.encode(bytes)),
            width,
            height,
            file: None,
        });
    }
    // A GIF's first frame is what is shown of it.
    let decoded = reader().decode().map_err(undecodable)?;
    let scaled = if width.max(height) > MAX_EDGE {
        decoded.resize(MAX_EDGE, MAX_EDGE, image::imageops::FilterType::Triangle)
    } else {
        decoded
    };
    let encode = |format: ImageFormat| -> Result<Vec<u8>, ImageError> {
        let mut out = Cursor::new(Vec::new());
        let result = match format {
            // JPEG has no alpha channel.
            ImageFormat::Jpeg => scaled.to_rgb8().write_to(&mut out, format),
            _ => scaled.write_to(&mut out, format),
        };
        result.map_err(undecodable)?;
        Ok(out.into_inner())
    };
    let (mut data, mut media_type) = if format == ImageFormat::Jpeg {
        (encode(ImageFormat::Jpeg)?, "image/jpeg")
    } else {
        (encode(ImageFormat::Png)?, "image/png")
    };
    if data.len() > MAX_BYTES {
        (data, media_type) = (encode(ImageFormat::Jpeg)?, "image/jpeg");
    }
    let (width, height) = scaled.dimensions();
    Ok(Image {
        media_type: media_type.to_owned(),
        data: ImageData::new(base64::engine::general_purpose::STANDARD.encode(&data)),
        width,
        height,
        file: None,
    })
}

/// What the model is told when it cannot be shown an image.
pub fn cannot_see(model: &str) -> String {
    format!(
        "the model in use ({model}) does not take images, so the image cannot be shown to it. \
         If it does take them, set `\"images\": true` in its settings; otherwise switch to a \
         model that does (Claude, Gemini, GPT-4o/4.1/5, or a local vision model)"
    )
}

pub struct ViewImage;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The image file, relative to the workspace root (or absolute, inside the workspace).
    path: String,
}

impl Tool for ViewImage {
    fn name(&self) -> &'static str {
        "view_image"
    }

    fn description(&self) -> &'static str {
        "Shows you an image file from the workspace (PNG, JPEG, GIF or WebP): a screenshot, a \
         diagram, a rendered page or a UI you are changing. Use it when the task depends on \
         what an image looks like; use read_file for text. Large images are scaled down to \
         1568 pixels on their long side."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn mutates(&self) -> bool {
        false
    }

    fn needs_images(&self) -> bool {
        true
    }

    fn title(&self, args: &Value) -> String {
        match args.get("path").and_then(Value::as_str) {
            Some(path) => format!("View {path}"),
            None => "View an image".to_owned(),
        }
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Args { path } = parse_args(self.name(), args)?;
            // The model the call came from, when there is one to ask (always, in a session).
            if let Some(parent) = &ctx.parent {
                let config = parent.model.config();
                if !config.images {
                    return Err(ToolError::Respond(cannot_see(&config.model)));
                }
            }
            let path = ctx.workspace.resolve_for_reading(&path)?;
            let shown = ctx.workspace.display(&path);
            check_is_file(&path, &shown).await?;
            let size = tokio::fs::metadata(&path)
                .await
                .map_err(|error| ToolError::Respond(format!("could not read {shown}: {error}")))?
                .len();
            if size > MAX_FILE_BYTES {
                return Err(ToolError::Respond(format!(
                    "{shown} is {size} bytes; view_image reads images of at most \
                     {MAX_FILE_BYTES} bytes"
                )));
            }
            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|error| ToolError::Respond(format!("could not read {shown}: {error}")))?;
            // Decoding and scaling take a while for a large image: off the async threads.
            let image = tokio::task::spawn_blocking(move || prepare(&bytes))
                .await
                .map_err(|error| ToolError::Fatal(format!("the image decoder failed: {error}")))?
                .map_err(|error| ToolError::Respond(format!("{shown}: {error}")))?;
            let format = image.format().to_ascii_uppercase();
            Ok(ToolOutput {
                text: format!(
                    "{shown} ({}×{} {format}) is shown below.",
                    image.width, image.height
                ),
                locations: vec![Location {
                    path: path.clone(),
                    line: None,
                }],
                images: vec![image],
                ..ToolOutput::default()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbaImage::from_fn(width, height, |x, y| {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 128, 255])
        });
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn decoded(image: &Image) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(image.data.as_str())
            .unwrap()
    }

    #[test]
    fn a_small_image_is_sent_as_it_is() {
        let bytes = png(40, 20);
        let image = prepare(&bytes).unwrap();
        assert_eq!(
            (image.media_type.as_str(), image.width, image.height),
            ("image/png", 40, 20)
        );
        assert_eq!(decoded(&image), bytes);
    }

    #[test]
    fn a_large_image_is_scaled_to_the_long_edge_keeping_its_shape() {
        let image = prepare(&png(3000, 1500)).unwrap();
        assert_eq!((image.width, image.height), (MAX_EDGE, MAX_EDGE / 2));
        let again = image::load_from_memory(&decoded(&image)).unwrap();
        assert_eq!(again.dimensions(), (MAX_EDGE, MAX_EDGE / 2));
    }

    #[test]
    fn what_is_no_image_is_refused_by_name() {
        assert_eq!(prepare(b"hello"), Err(ImageError::UnknownFormat));
        let mut cut = png(40, 20);
        cut.truncate(30);
        assert!(matches!(prepare(&cut), Err(ImageError::Undecodable(_))));
    }

    #[test]
    fn a_canvas_claimed_huge_by_a_small_file_is_not_decoded() {
        // A PNG header claiming 100000×100000 pixels (a decompression bomb's first bytes).
        let mut bytes = png(1, 1);
        bytes[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        assert!(matches!(prepare(&bytes), Err(ImageError::Undecodable(_))));
    }

    #[tokio::test]
    async fn the_tool_shows_a_workspace_image_and_refuses_other_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), png(8, 6)).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap();
        let ctx = ToolContext::on_disk(vec![dir.path().to_owned()]);
        let output = ViewImage
            .run(serde_json::json!({"path": "shot.png"}), &ctx)
            .await
            .unwrap();
        assert_eq!(output.text, "shot.png (8×6 PNG) is shown below.");
        assert_eq!(output.images.len(), 1);
        let refused = ViewImage
            .run(serde_json::json!({"path": "notes.txt"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "notes.txt: not a PNG, JPEG, GIF or WebP image"
        );
        let outside = ViewImage
            .run(serde_json::json!({"path": "../x.png"}), &ctx)
            .await;
        assert!(outside.is_err());
    }
}
