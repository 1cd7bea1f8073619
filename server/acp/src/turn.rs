//! One `session/prompt`, from its content blocks to its answer: linked files read and
//! attached, the turn queued on the host, its events sent as `session/update`s, each call the
//! policy asks about put to the user as `session/request_permission` (from a task of its own, so
//! events keep flowing and `session/cancel` is never stuck behind an unanswered question), and
//! the prompt answered with the stop reason once the turn's last update is out.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_client_protocol::v1::{self, schema as acp};
use agent_client_protocol::{Client, Error, ErrorCode};
use tandem_agent::host::{self, Frontend, Host, TurnEvent, TurnRequest, WatchedEvent};
use tandem_agent::store::ReplayTurn;
use tandem_agent::{
    ApprovalDecision, Attachment, Event, StopReason, ToolCallStatus, ToolCallUpdate,
};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tracing::debug;

use crate::agent::{host_error, invalid_params, notify};
use crate::client::{AcpFrontend, ClientSide};
use crate::editor::MAX_CLIENT_READ_BYTES;
use crate::translate::{self, FileLink, PromptParts, Translator, TurnEnd};

/// Linked files bigger than this are refused rather than read for an attachment (which shows
/// 16 KiB of them anyway).
const MAX_LINKED_FILE_BYTES: u64 = 4 * MAX_CLIENT_READ_BYTES;

/// What the front end keeps of a session.
#[derive(Clone)]
pub(crate) struct SessionEntry {
    pub(crate) roots: Vec<std::path::PathBuf>,
    /// This connection's files, for linked files (the disk when attached to an editor).
    pub(crate) frontend: Arc<AcpFrontend>,
    /// What the session's tools use: `frontend`, or attached, the editor's.
    pub(crate) session_frontend: Arc<dyn Frontend>,
    pub(crate) side: Arc<ClientSide>,
    /// Bumped by every `session/cancel`: a prompt whose turn saw it answers `cancelled`
    /// whatever the turn ended with.
    pub(crate) cancels: Arc<AtomicU64>,
    /// Whether the client has been told the session's title.
    pub(crate) titled: Arc<AtomicBool>,
    /// The title the client was told (the first prompt's first line), which `session/list`
    /// shows for the live session too.
    pub(crate) title: Arc<Mutex<Option<String>>>,
    /// The session's finished turns as a replay shows them: those restored from its saved file,
    /// then those this process ran. A `session/load` of the live session replays them (the
    /// host hands a live session back without its saved turns).
    pub(crate) played: Arc<Mutex<Vec<ReplayTurn>>>,
    /// The turns this connection queued that have not ended, which an attached connection
    /// cancels when it leaves.
    pub(crate) own_turns: Arc<Mutex<HashSet<String>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// A file linked from a prompt, attached: the client's text when it offers its files (the
/// user's unsaved changes included), else the disk's.
async fn attach(entry: &SessionEntry, link: FileLink) -> Result<Attachment, Error> {
    let path = link
        .path
        .canonicalize()
        .unwrap_or_else(|_| link.path.clone());
    let shown = entry
        .roots
        .iter()
        .find_map(|root| path.strip_prefix(root).ok())
        .map_or_else(
            || path.display().to_string(),
            |relative| relative.display().to_string(),
        );
    if let Some(embedded) = &link.embedded {
        // The client sent the text (Zed's @-mentions): it is what the model sees, and counts as
        // read when it is the file's text now, so an edit right after needs no read_file.
        let current = match entry.frontend.fs.read_for_prompt(&path).await {
            Some(read) => Some(read),
            None => read_disk_text(&path).await.ok().map(|text| (text, None)),
        };
        return Ok(translate::embedded_attachment(
            &shown, &path, embedded, current, link.lines,
        ));
    }
    let (text, version) = match entry.frontend.fs.read_for_prompt(&path).await {
        Some(read) => read,
        None => (read_disk_text(&path).await?, None),
    };
    Ok(translate::file_attachment(
        &shown, &path, text, version, link.lines,
    ))
}

/// A linked file's text from the disk, refused when it is too large or not UTF-8.
async fn read_disk_text(path: &std::path::Path) -> Result<String, Error> {
    let too_big = tokio::fs::metadata(path)
        .await
        .is_ok_and(|metadata| metadata.len() > MAX_LINKED_FILE_BYTES);
    if too_big {
        return Err(invalid_params(format!(
            "{} is too large to attach; name it in the prompt and let Tandem read what it needs",
            path.display()
        )));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|error| invalid_params(format!("cannot attach {}: {error}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| {
        invalid_params(format!(
            "cannot attach {}: it is not UTF-8 text",
            path.display()
        ))
    })
}

/// Runs one prompt and answers with its stop reason, or with an error for a turn that failed.
pub(crate) async fn run(
    host: &Arc<Host>,
    cx: &v1::ConnectionTo<Client>,
    session: &acp::SessionId,
    entry: &SessionEntry,
    parts: PromptParts,
    origin: String,
) -> Result<acp::PromptResponse, Error> {
    let id = session.0.to_string();
    // The user may have typed since the last turn: files are read afresh, once each.
    entry.frontend.fs.forget_reads();
    let mut context = parts.attachments;
    for link in parts.files {
        context.push(attach(entry, link).await?);
    }
    let text = if parts.text.trim().is_empty() && (!context.is_empty() || !parts.images.is_empty())
    {
        "See the attached context.".to_owned()
    } else {
        parts.text
    };
    let cancels = entry.cancels.load(Ordering::SeqCst);
    let title = host::first_line(&text, 80);
    let prompt_text = text.clone();
    let mut handle = host
        .prompt_from(
            &id,
            TurnRequest {
                text,
                context,
                images: parts.images,
                hooks: None,
            },
            Some(origin),
        )
        .map_err(host_error)?;
    lock(&entry.own_turns).insert(handle.turn_id.clone());
    if !entry.titled.swap(true, Ordering::SeqCst) {
        *entry.title.lock().unwrap_or_else(PoisonError::into_inner) = Some(title.clone());
        notify(
            cx,
            session,
            acp::SessionUpdate::SessionInfoUpdate(
                acp::SessionInfoUpdate::new()
                    .title(title)
                    .updated_at(translate::rfc3339(now_ms())),
            ),
        );
    }
    let mut translator = Translator::default();
    let mut asking = JoinSet::new();
    // The open questions, by call: withdrawn once the call moves on (another front end
    // attached to the session answered first).
    let mut asked: HashMap<String, AbortHandle> = HashMap::new();
    let mut finished = None;
    let mut seen = Vec::new();
    while let Some(event) = handle.events.recv().await {
        let event = match event {
            TurnEvent::Started { .. } => continue,
            TurnEvent::Agent(Event::TurnFinished {
                stop_reason,
                message,
            }) => {
                finished = Some((stop_reason, message));
                break;
            }
            TurnEvent::Agent(event) => event,
        };
        seen.push(event.clone());
        {
            // Under the lock the client terminal's own update is sent under (`client.rs`), so
            // an update of a call never overtakes the one that embedded its terminal.
            let terminals = entry
                .side
                .terminals
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Event::ToolCall(call) = &event {
                if let Some(terminal) = terminals.get(&call.call_id) {
                    translator.note_terminal(&call.call_id, terminal);
                }
            }
            for update in translator.event(&event) {
                notify(cx, session, update);
            }
        }
        if let Event::ToolCall(call) = &event {
            if call.status == ToolCallStatus::AwaitingApproval {
                if !asked.contains_key(&call.call_id) {
                    let ask = asking.spawn(ask_permission(
                        cx.clone(),
                        session.clone(),
                        call.clone(),
                        handle.approvals.clone(),
                    ));
                    asked.insert(call.call_id.clone(), ask);
                }
            } else if let Some(ask) = asked.get(&call.call_id) {
                ask.abort();
            }
        }
    }
    lock(&entry.own_turns).remove(&handle.turn_id);
    // A question still open is withdrawn (dropping its request sends `$/cancel_request`), and
    // waited for, so the withdrawal goes out before the prompt's answer.
    asking.shutdown().await;
    if let Some((stop_reason, _)) = &finished {
        entry
            .played
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(ReplayTurn {
                turn_id: handle.turn_id.clone(),
                text: prompt_text,
                events: translate::replay_events(&seen),
                stop_reason: *stop_reason,
            });
    }
    if entry.cancels.load(Ordering::SeqCst) != cancels {
        return Ok(acp::PromptResponse::new(acp::StopReason::Cancelled));
    }
    let (reason, message) = finished.unwrap_or((
        StopReason::Error,
        Some("the session stopped before its turn finished".to_owned()),
    ));
    match translate::turn_end(reason, message.as_deref()) {
        TurnEnd::Stop { reason, note } => {
            if let Some(note) = note {
                notify(cx, session, translate::message_chunk(&note));
            }
            Ok(acp::PromptResponse::new(reason))
        }
        TurnEnd::Failed(message) => Err(Error::new(ErrorCode::INTERNAL_ERROR, message)),
        TurnEnd::NotSetUp(message) => Err(Error::new(ErrorCode::AUTH_REQUIRED, message)),
    }
}

/// Asks the user about one call and sends the answer to the turn. An error (the client cannot
/// ask, or the connection is gone) answers `cannotAsk`, so the call is not run.
async fn ask_permission(
    cx: v1::ConnectionTo<Client>,
    session: acp::SessionId,
    call: ToolCallUpdate,
    approvals: mpsc::UnboundedSender<(String, ApprovalDecision)>,
) {
    let request = acp::RequestPermissionRequest::new(
        session,
        translate::tool_call_update(&call, None),
        translate::permission_options(&call),
    );
    let decision = match cx.send_request(request).block_task().await {
        Ok(response) => translate::answer(&response),
        Err(error) => ApprovalDecision::CannotAsk {
            reason: format!("the editor could not ask the user: {}", error.message),
        },
    };
    debug!(call = call.call_id, ?decision, "permission answered");
    // The turn may be over (cancelled meanwhile): then nobody waits for the answer.
    let _ = approvals.send((call.call_id, decision));
}

/// Attached: the turns other front ends queue in a session this connection joined, as this
/// client sees them: the prompt as a `user_message_chunk`, then the agent's updates as for its
/// own turns, and each permission request (an answer goes to the turn through the host; the
/// first answer from any front end wins). A request this client cannot show is no answer: the
/// front end that queued the turn still asks. A question still open is withdrawn once the call
/// moves on or the turn ends. Ends when the client leaves or stops following the session.
pub(crate) async fn follow_others(
    host: Arc<Host>,
    cx: v1::ConnectionTo<Client>,
    session: acp::SessionId,
    origin: String,
    mut events: mpsc::UnboundedReceiver<WatchedEvent>,
) {
    let mut translators: HashMap<String, Translator> = HashMap::new();
    let mut asked: HashMap<(String, String), AbortHandle> = HashMap::new();
    while let Some(watched) = events.recv().await {
        if watched.origin.as_deref() == Some(origin.as_str()) {
            continue;
        }
        let WatchedEvent { turn_id, event, .. } = watched;
        let event = match event {
            TurnEvent::Started { text } => {
                translators.insert(turn_id, Translator::default());
                notify(
                    &cx,
                    &session,
                    acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(
                        acp::ContentBlock::from(text),
                    )),
                );
                continue;
            }
            TurnEvent::Agent(Event::TurnFinished { message, .. }) => {
                translators.remove(&turn_id);
                asked.retain(|(turn, _), ask| {
                    let done = *turn == turn_id;
                    if done {
                        ask.abort();
                    }
                    !done
                });
                if let Some(message) = message {
                    notify(
                        &cx,
                        &session,
                        translate::message_chunk(&format!("\n\n_{message}_\n\n")),
                    );
                }
                continue;
            }
            TurnEvent::Agent(event) => event,
        };
        let translator = translators.entry(turn_id.clone()).or_default();
        for update in translator.event(&event) {
            notify(&cx, &session, update);
        }
        let Event::ToolCall(call) = &event else {
            continue;
        };
        let key = (turn_id.clone(), call.call_id.clone());
        if call.status != ToolCallStatus::AwaitingApproval {
            if let Some(ask) = asked.remove(&key) {
                ask.abort();
            }
            continue;
        }
        if asked.contains_key(&key) {
            continue;
        }
        let request = acp::RequestPermissionRequest::new(
            session.clone(),
            translate::tool_call_update(call, None),
            translate::permission_options(call),
        );
        let (cx, host, session_id, call_id) = (
            cx.clone(),
            host.clone(),
            session.0.to_string(),
            call.call_id.clone(),
        );
        let ask = tokio::spawn(async move {
            match cx.send_request(request).block_task().await {
                Ok(response) => {
                    let decision = translate::answer(&response);
                    debug!(
                        call = call_id,
                        ?decision,
                        "permission answered for another front end's turn"
                    );
                    let _ = host.approve(&session_id, &turn_id, &call_id, decision);
                }
                Err(error) => debug!(call = call_id, "not asked here: {}", error.message),
            }
        });
        asked.insert(key, ask.abort_handle());
    }
    for ask in asked.values() {
        ask.abort();
    }
}
