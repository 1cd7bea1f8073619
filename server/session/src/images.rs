//! Images in saved sessions, kept by reference: a session file would otherwise repeat a
//! screenshot's megabytes of base64 in every record that holds the history (each compression
//! writes it whole). Before a record is written, each image it carries is written once, as the
//! image file it is, to `<session id>.images/<hash>.<ext>` beside the session's file, and the
//! record names that file instead of holding the bytes; reading the session back fills the
//! bytes in again. An image whose file is gone becomes a note in its place, so the history
//! still makes sense to the model.

use std::borrow::Cow;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use base64::Engine;
use tandem_providers::{Image, ImageData, Message, Part};

use crate::store::Record;

fn images_mut(messages: &mut [Message]) -> impl Iterator<Item = &mut Image> {
    messages
        .iter_mut()
        .flat_map(|message| parts_mut(&mut message.parts))
}

fn parts_mut(parts: &mut [Part]) -> impl Iterator<Item = &mut Image> {
    parts.iter_mut().filter_map(|part| match part {
        Part::Image(image) => Some(image),
        _ => None,
    })
}

fn record_images(record: &mut Record) -> Box<dyn Iterator<Item = &mut Image> + '_> {
    match record {
        Record::Message { message } => Box::new(parts_mut(&mut message.parts)),
        Record::Appended { parts } => Box::new(parts_mut(parts)),
        Record::History { messages } => Box::new(images_mut(messages)),
        _ => Box::new(std::iter::empty()),
    }
}

/// Whether `record` carries the bytes of an image.
fn has_image_data(record: &Record) -> bool {
    let inline = |parts: &[Part]| {
        parts
            .iter()
            .any(|part| matches!(part, Part::Image(image) if !image.data.is_empty()))
    };
    match record {
        Record::Message { message } => inline(&message.parts),
        Record::Appended { parts } => inline(parts),
        Record::History { messages } => messages.iter().any(|message| inline(&message.parts)),
        _ => false,
    }
}

/// `record` as it is written: its images' bytes in files under `dir`, the record naming them.
/// Borrowed when it carries no image bytes.
pub(crate) fn externalize<'a>(record: &'a Record, dir: &Path) -> std::io::Result<Cow<'a, Record>> {
    if !has_image_data(record) {
        return Ok(Cow::Borrowed(record));
    }
    let mut record = record.clone();
    for image in record_images(&mut record) {
        if image.data.is_empty() {
            continue;
        }
        let name = file_name(image);
        let path = dir.join(&name);
        if !path.exists() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(image.data.as_str())
                .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))?;
            tandem_sandbox::files::create_private_dir(dir)?;
            let mut file = tandem_sandbox::files::private_options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)?;
            std::io::Write::write_all(&mut file, &bytes)?;
        }
        image.file = Some(name);
        image.data = ImageData::default();
    }
    Ok(Cow::Owned(record))
}

/// A name from the image's bytes: the same image is written once however often it is saved.
fn file_name(image: &Image) -> String {
    let mut hasher = DefaultHasher::new();
    image.data.as_str().hash(&mut hasher);
    let extension = match image.format() {
        "jpeg" => "jpg",
        other => other,
    };
    format!("{:016x}.{extension}", hasher.finish())
}

/// Fills in the bytes of the images `messages` name from `dir`; an image whose file cannot be
/// read becomes a text part saying so, and a warning.
pub(crate) fn restore(messages: &mut [Message], dir: &Path, warnings: &mut Vec<String>) {
    for message in messages {
        for part in &mut message.parts {
            let Part::Image(image) = part else { continue };
            if !image.data.is_empty() {
                continue;
            }
            let Some(name) = image.file.clone() else {
                continue;
            };
            // A name is a file in `dir`, never a path out of it.
            let read = if name.contains(['/', '\\']) || name.starts_with('.') {
                Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not an image file name",
                ))
            } else {
                std::fs::read(dir.join(&name))
            };
            match read {
                Ok(bytes) => {
                    image.data =
                        ImageData::new(base64::engine::general_purpose::STANDARD.encode(bytes));
                }
                Err(error) => {
                    warnings.push(format!("an image of the session ({name}) is gone: {error}"));
                    *part = Part::Text {
                        text: format!("[An image was shown here; its saved copy {name} is gone.]"),
                    };
                }
            }
        }
    }
}
