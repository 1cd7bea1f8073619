//! gemini wire format (stub; being written).

use crate::config::ModelConfig;
use crate::error::{ErrorBody, Result};
use crate::model::{ChatRequest, StreamEvent};
use crate::wire::{StreamDecoder, WireRequest};

pub(crate) fn request(_config: &ModelConfig, _request: &ChatRequest) -> WireRequest {
    todo!()
}

pub(crate) fn error_body(body: &str) -> ErrorBody {
    ErrorBody { message: body.to_owned(), ..ErrorBody::default() }
}

#[derive(Default)]
pub(crate) struct Decoder {}

impl StreamDecoder for Decoder {
    fn event(&mut self, _event: Option<&str>, _data: &str) -> Result<Vec<StreamEvent>> {
        todo!()
    }
    fn is_done(&self) -> bool {
        false
    }
    fn end(&mut self) -> Result<Vec<StreamEvent>> {
        todo!()
    }
}
