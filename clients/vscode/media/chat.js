// The Tandem chat webview's script: shows the log the extension renders (src/render.ts), sends
// prompts, and turns clicks in the log (open, diff, approval answers, links) into messages for the
// extension. Plain browser JS under a strict CSP with a nonce: listeners only, no inline handlers.
// The composer asks the extension for completions (`/` commands, `@` files: what matches and what
// taking one inserts is decided there, in src/composer.ts) and for attachments (its attach menu).
// The extension replaces #log wholesale on every render, so whatever the user has going on inside
// it (an expanded "Thoughts", a half-typed approval feedback) is carried over by hand here.
// Images pasted into the prompt (a screenshot) wait in #images until the prompt is sent with them.
(function () {
  "use strict";

  const vscode = acquireVsCodeApi();
  const log = document.getElementById("log");
  const prompt = document.getElementById("prompt");
  const send = document.getElementById("send");
  const stop = document.getElementById("stop");
  const context = document.getElementById("context");
  const toolbar = document.getElementById("toolbar");
  const modelName = document.getElementById("model-name");
  const suggestions = document.getElementById("suggestions");
  // The completions shown above the prompt (`/` commands, `@` files), and which one Tab or Enter
  // takes. Each says what it replaces: `start`..`end` of the prompt, by `insert`.
  let shown = [];
  let selected = 0;
  // Pasted images, `{mimeType, data}` with the bytes in base64, sent with the next prompt.
  let images = [];
  const imageChips = document.getElementById("images");
  // What the server takes; anything larger is refused here, before it travels.
  const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

  // Within this many pixels of the end counts as "at the bottom": a streamed answer keeps the
  // view pinned there, and a user who scrolled up to read is left alone.
  const BOTTOM_SLACK = 24;

  const saved = vscode.getState();
  if (saved && typeof saved.draft === "string") {
    prompt.value = saved.draft;
  }

  function saveDraft() {
    vscode.setState({ draft: prompt.value });
  }

  function sendPrompt() {
    const text = prompt.value;
    if (text.trim() === "" && images.length === 0) {
      return;
    }
    vscode.postMessage({ type: "prompt", text: text, images: images });
    prompt.value = "";
    images = [];
    showImages();
    saveDraft();
  }

  // One chip per pasted image, with a button that takes it out again.
  function showImages() {
    imageChips.textContent = "";
    imageChips.hidden = images.length === 0;
    images.forEach((image, index) => {
      const chip = document.createElement("span");
      chip.className = "image-chip";
      const kb = Math.round((image.data.length * 3) / 4 / 1024);
      chip.textContent = `Image ${index + 1} (${image.mimeType.replace("image/", "").toUpperCase()}, ${kb} KB) `;
      const remove = document.createElement("button");
      remove.className = "codicon codicon-close";
      remove.title = "Remove this image";
      remove.setAttribute("aria-label", `Remove image ${index + 1}`);
      remove.addEventListener("click", () => {
        images.splice(index, 1);
        showImages();
      });
      chip.appendChild(remove);
      imageChips.appendChild(chip);
    });
  }

  // A pasted screenshot (or copied image file) joins the prompt; pasted text is left to the
  // textarea.
  prompt.addEventListener("paste", (event) => {
    const files = Array.from(event.clipboardData ? event.clipboardData.files : []).filter((file) =>
      /^image\/(png|jpeg|gif|webp)$/.test(file.type),
    );
    if (files.length === 0) {
      return;
    }
    event.preventDefault();
    for (const file of files) {
      if (file.size > MAX_IMAGE_BYTES) {
        vscode.postMessage({ type: "imageTooLarge", bytes: file.size });
        continue;
      }
      const reader = new FileReader();
      reader.addEventListener("load", () => {
        const url = String(reader.result);
        const comma = url.indexOf(",");
        images.push({ mimeType: file.type, data: url.slice(comma + 1) });
        showImages();
      });
      reader.readAsDataURL(file);
    }
  });

  function render(html) {
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight <= BOTTOM_SLACK;

    const openThoughts = new Set();
    for (const details of log.querySelectorAll("section.turn details.thoughts[open]")) {
      openThoughts.add(details.closest("section.turn").dataset.turnId);
    }
    const feedback = new Map();
    for (const area of log.querySelectorAll(".approval .approval-feedback")) {
      feedback.set(area.closest(".approval").dataset.requestId, area.value);
    }
    const active = document.activeElement;
    const focusedFeedback =
      active && active.classList && active.classList.contains("approval-feedback") && log.contains(active)
        ? {
            requestId: active.closest(".approval").dataset.requestId,
            start: active.selectionStart,
            end: active.selectionEnd,
          }
        : undefined;

    log.innerHTML = html;

    for (const section of log.querySelectorAll("section.turn")) {
      const details = section.querySelector("details.thoughts");
      if (details && openThoughts.has(section.dataset.turnId)) {
        details.open = true;
      }
    }
    for (const approval of log.querySelectorAll(".approval")) {
      const area = approval.querySelector(".approval-feedback");
      const value = feedback.get(approval.dataset.requestId);
      if (area && value !== undefined) {
        area.value = value;
      }
      if (area && focusedFeedback && focusedFeedback.requestId === approval.dataset.requestId) {
        area.focus();
        area.setSelectionRange(focusedFeedback.start, focusedFeedback.end);
      }
    }

    if (atBottom) {
      log.scrollTop = log.scrollHeight;
    }
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (!message || typeof message.type !== "string") {
      return;
    }
    switch (message.type) {
      case "render":
        render(typeof message.html === "string" ? message.html : "");
        stop.hidden = !message.running;
        context.textContent = typeof message.context === "string" ? message.context : "";
        context.title = typeof message.contextTitle === "string" ? message.contextTitle : "";
        toolbar.hidden = context.textContent === "";
        modelName.textContent = typeof message.model === "string" ? message.model : "";
        break;
      case "suggestions":
        // An answer to an older state of the prompt is dropped; the newer one's is on its way.
        if (
          message.text === prompt.value &&
          (message.caret === undefined || message.caret === prompt.selectionStart) &&
          Array.isArray(message.items)
        ) {
          showSuggestions(message.items);
        }
        break;
      case "insert": {
        // An attachment from the attach menu, put at the caret by the extension. Should the
        // prompt have changed meanwhile, the attachment goes at its end instead.
        if (typeof message.text !== "string") {
          break;
        }
        if (prompt.value === message.base) {
          prompt.value = message.text;
          prompt.setSelectionRange(message.caret, message.caret);
        } else {
          const insertion = typeof message.insertion === "string" ? message.insertion : "";
          prompt.value += (prompt.value === "" || /\s$/.test(prompt.value) ? "" : "\n") + insertion + " ";
          prompt.setSelectionRange(prompt.value.length, prompt.value.length);
        }
        hideSuggestions();
        saveDraft();
        prompt.focus();
        break;
      }
      case "focusPrompt":
        prompt.focus();
        break;
      case "setPrompt":
        prompt.value = typeof message.text === "string" ? message.text : "";
        saveDraft();
        prompt.focus();
        break;
    }
  });

  function showSuggestions(items) {
    shown = items;
    selected = 0;
    suggestions.replaceChildren(
      ...items.map((item, index) => {
        const row = document.createElement("li");
        row.setAttribute("role", "option");
        row.dataset.index = String(index);
        const icon = document.createElement("span");
        icon.className = "suggestion-icon codicon codicon-" + String(item.icon || "blank").replace(/[^a-z-]/g, "");
        const name = document.createElement("span");
        name.className = "suggestion-name";
        name.textContent = item.label;
        const description = document.createElement("span");
        description.className = "suggestion-description";
        description.textContent = item.description || "";
        row.append(icon, name, description);
        return row;
      }),
    );
    suggestions.hidden = items.length === 0;
    highlight();
  }

  function highlight() {
    suggestions.querySelectorAll("li").forEach((row, index) => row.setAttribute("aria-selected", String(index === selected)));
  }

  function hideSuggestions() {
    shown = [];
    suggestions.hidden = true;
  }

  function takeSuggestion(index) {
    const item = shown[index];
    if (!item) {
      return;
    }
    const text = prompt.value;
    prompt.value = text.slice(0, item.start) + item.insert + text.slice(item.end);
    const caret = item.start + item.insert.length;
    prompt.setSelectionRange(caret, caret);
    hideSuggestions();
    saveDraft();
    prompt.focus();
    // A folder taken (`@src/`): its contents are next.
    requestCompletion();
  }

  // Whether the text before the caret may end in a mention being typed (the extension decides,
  // with the server's rules): an `@` after the start, whitespace, a bracket or a quote, then no
  // whitespace (or, after `@"`, no closing quote).
  const TYPING_MENTION = /(^|[\s([{<"'`])@("[^"\n]*|[^\s"@][^\s@]*)?$/;

  // Asks for the completions of the prompt as it is (the caret included), or hides them.
  function requestCompletion() {
    const text = prompt.value;
    const caret = prompt.selectionStart;
    const collapsed = caret === prompt.selectionEnd;
    if (/^\/[^\s/]*$/.test(text) || (collapsed && TYPING_MENTION.test(text.slice(0, caret)))) {
      vscode.postMessage({ type: "complete", text: text, caret: caret });
    } else {
      hideSuggestions();
    }
  }

  prompt.addEventListener("input", requestCompletion);
  prompt.addEventListener("click", requestCompletion);
  prompt.addEventListener("keyup", (event) => {
    if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) {
      requestCompletion();
    }
  });
  prompt.addEventListener("blur", hideSuggestions);
  suggestions.addEventListener("mousedown", (event) => {
    const row = event.target instanceof Element ? event.target.closest("li[data-index]") : null;
    if (row) {
      event.preventDefault();
      takeSuggestion(Number(row.dataset.index));
    }
  });
  document.getElementById("model").addEventListener("click", () => vscode.postMessage({ type: "pickModel" }));
  document.getElementById("attach").addEventListener("click", () =>
    vscode.postMessage({ type: "attach", text: prompt.value, caret: prompt.selectionStart }),
  );

  prompt.addEventListener("keydown", (event) => {
    if (shown.length > 0 && !suggestions.hidden) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        selected = (selected + (event.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
        highlight();
        return;
      }
      // Enter on a name or path typed in full sends it; otherwise Tab and Enter take the
      // highlighted one.
      const item = shown[selected];
      const exact = item && prompt.value.slice(item.start, item.end) === item.insert.trimEnd();
      if ((event.key === "Tab" || (event.key === "Enter" && !exact)) && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        takeSuggestion(selected);
        return;
      }
      if (event.key === "Enter") {
        hideSuggestions();
      }
      if (event.key === "Escape") {
        event.preventDefault();
        hideSuggestions();
        return;
      }
    }
    // While an input method is composing, Enter confirms the composition, not the prompt.
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendPrompt();
    }
  });
  prompt.addEventListener("input", saveDraft);
  send.addEventListener("click", sendPrompt);
  stop.addEventListener("click", () => vscode.postMessage({ type: "stop" }));

  log.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) {
      return;
    }
    const link = target.closest("a[href]");
    if (link && log.contains(link)) {
      // The webview must not navigate; the extension decides how to open it.
      event.preventDefault();
      vscode.postMessage({ type: "link", href: link.getAttribute("href") });
      return;
    }
    const button = target.closest("button");
    if (!button || !log.contains(button)) {
      return;
    }
    const data = button.dataset;
    if (data.decision) {
      answerApproval(button);
      return;
    }
    switch (data.action) {
      case "open": {
        const line = data.line === undefined ? undefined : Number(data.line);
        vscode.postMessage({ type: "open", uri: data.uri, line: Number.isFinite(line) ? line : undefined });
        break;
      }
      case "diff":
        vscode.postMessage({ type: "diff", callId: data.callId });
        break;
      case "open-settings":
        vscode.postMessage({ type: "openSettings" });
        break;
      case "approval-diff":
        vscode.postMessage({ type: "approvalDiff", requestId: Number(data.requestId) });
        break;
    }
  });

  function answerApproval(button) {
    const approval = button.closest(".approval");
    const area = approval ? approval.querySelector(".approval-feedback") : null;
    const text = area ? area.value.trim() : "";
    const decision = button.dataset.decision;
    if (decision === "rejectWithFeedback" && text === "") {
      // This option is the one that promises to say why: ask for it instead of sending nothing.
      if (area) {
        area.focus();
      }
      return;
    }
    vscode.postMessage({
      type: "approve",
      requestId: Number(button.dataset.requestId),
      decision: decision,
      feedback: text === "" ? undefined : text,
    });
    // One answer per request: a second click before the card goes away would answer twice.
    if (approval) {
      for (const other of approval.querySelectorAll("button[data-decision]")) {
        other.disabled = true;
      }
    }
  }

  vscode.postMessage({ type: "ready" });
})();
