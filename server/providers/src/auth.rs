//! How a model's requests are authorised: an API key in the wire format's header, an AWS SigV4
//! signature (Bedrock), or a Google access token (Vertex AI). Chosen once per model when the
//! model is set up (`Auth::for_model`, from `Model::new`), applied by `http.rs` to each request
//! once its body is final, since a signature covers the body's bytes. Wire formats never see a
//! credential, and everything `apply` adds is returned so that errors can be scrubbed of it.

use crate::config::{ModelConfig, ProviderKind};
use crate::error::{ProviderError, Result};
use crate::wire::Wire;

pub(crate) enum Auth {
    /// Nothing to add: a server that takes no key (a local one), or none configured.
    None,
    /// A key in a header (`authorization: Bearer …`, `x-api-key`, `api-key`…). `secret` is the
    /// key itself, for scrubbing.
    Header {
        name: &'static str,
        value: String,
        secret: String,
    },
    /// Bedrock's SigV4 signature, with credentials from AWS's chain.
    SigV4(crate::aws::Signer),
    /// Vertex AI's `authorization: Bearer`, from Google's Application Default Credentials.
    GoogleToken(crate::google::Tokens),
}

impl Auth {
    /// The authorisation `config`'s requests carry over `wire`, `key` being its API key (which
    /// only `http.rs` reads out of the config): for Bedrock the key
    /// (`AWS_BEARER_TOKEN_BEDROCK`) when one is set, else SigV4; for Vertex AI a Google token;
    /// for the rest the key, if any. Fails when Bedrock has no region or Vertex no project.
    pub(crate) fn for_model(wire: Wire, config: &ModelConfig, key: Option<&str>) -> Result<Auth> {
        let missing = |what: &str, setting: &str, variables: &str| ProviderError::Config {
            message: format!(
                "model `{}` ({} {}) has no {what}: set `{setting}` in the model's settings, or \
                 {variables} in the environment Tandem runs in",
                config.id, config.provider, config.model
            ),
        };
        match (config.provider, key) {
            (ProviderKind::Vertex, _) => match &config.project {
                Some(_) => Ok(Auth::GoogleToken(crate::google::Tokens::default())),
                None => Err(missing(
                    "Google Cloud project",
                    "project",
                    "GOOGLE_CLOUD_PROJECT",
                )),
            },
            (ProviderKind::Bedrock, None) => match &config.region {
                Some(region) => Ok(Auth::SigV4(crate::aws::Signer::new(region.clone()))),
                None => Err(missing(
                    "AWS region",
                    "region",
                    "AWS_REGION (or a `region` in the AWS profile)",
                )),
            },
            (_, Some(key)) => {
                let (name, value) = wire.auth_header(config, key);
                Ok(Auth::Header {
                    name,
                    value,
                    secret: key.to_owned(),
                })
            }
            (_, None) => Ok(Auth::None),
        }
    }

    /// Adds the credentials to `request`, whose body is final. Returns what was added that is
    /// secret (a key, a token, an access key id), for scrubbing errors.
    pub(crate) async fn apply(&self, request: &mut reqwest::Request) -> Result<Vec<String>> {
        match self {
            Auth::None => Ok(Vec::new()),
            Auth::Header {
                name,
                value,
                secret,
            } => {
                insert_secret(request, name, value)?;
                Ok(vec![secret.clone()])
            }
            Auth::SigV4(signer) => signer.sign(request).await,
            Auth::GoogleToken(tokens) => {
                let token = tokens.token().await?;
                insert_secret(request, "authorization", &format!("Bearer {token}"))?;
                Ok(vec![token])
            }
        }
    }
}

/// Sets the header `name` to `value`, marked sensitive so that no debug output shows it.
fn insert_secret(request: &mut reqwest::Request, name: &'static str, value: &str) -> Result<()> {
    let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
        // The error would not say more than this; the value must not be quoted.
        ProviderError::Config {
            message: format!(
                "the credential for the `{name}` header holds characters a header cannot carry \
                 (a line break, or a character outside ASCII)"
            ),
        }
    })?;
    value.set_sensitive(true);
    request
        .headers_mut()
        .insert(reqwest::header::HeaderName::from_static(name), value);
    Ok(())
}
