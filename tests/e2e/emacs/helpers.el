;;; helpers.el --- Shared helpers for Tandem's Emacs end-to-end scenarios  -*- lexical-binding: t -*-

;; Each scenario in this folder is run by `tests/e2e/emacs.rs' as
;;   emacs -Q --batch -l <scenario>.el
;; in a temporary workspace (the current directory) whose user settings choose a replay model,
;; with the built `tandem' first on PATH, so the configuration files here name it as a user's
;; would: ("tandem" "lsp").  A scenario loads this file, calls `tandem-test-run' with its body,
;; and Emacs exits 0 when the body returns and 1 (with the reason, the prompts and messages seen,
;; the buffers, the JSON-RPC traffic and the server log on stderr) when anything fails or times
;; out.
;;
;; Batch Emacs has no command loop, which changes two things the scenarios must make up for:
;; - The minibuffer reads from stdin, ignoring its initial contents.  Prompts are therefore
;;   answered by running the real `completing-read' inside a keyboard macro that presses RET
;;   (and, for a typed answer, with the text typed first), which makes Emacs use the real
;;   minibuffer, exactly as a user pressing Enter would.
;; - Idle timers never fire, and eglot sends `didChange' from one.  While a scenario waits, the
;;   user is idle, so `tandem-test-wait' fires the idle timers that are due, once each, as the
;;   command loop would.

;;; Code:

(require 'cl-lib)
(require 'package)
(require 'subr-x)

;; `-Q' skips the site files that make Debian's elpa-* packages (elpa-eglot, elpa-lsp-mode)
;; available; packages installed in the user's own package directory are found too.
(let ((debian "/usr/share/emacs/site-lisp/elpa"))
  (when (file-directory-p debian)
    (add-to-list 'package-directory-list debian)))
(package-initialize)

;; Whatever the packages write (lsp-mode's session file, eglot's and Emacs's own state) goes to
;; a temporary directory, never to the user's ~/.emacs.d.
(let ((home (getenv "TANDEM_EMACS_HOME")))
  (when home
    (setq user-emacs-directory (file-name-as-directory home))))

;; The workspace (the current directory) is the project, as it is for a user who opens it: a
;; temporary folder that happens to sit inside another repository (a checkout's `target/') must
;; not make that repository the root eglot reports to the server.
(defconst tandem-test-workspace (file-name-as-directory (expand-file-name default-directory))
  "The scenario's workspace: where Emacs was started.")
(with-eval-after-load 'project
  (add-hook 'project-find-functions
            (lambda (dir)
              (when (file-in-directory-p dir tandem-test-workspace)
                (cons 'transient tandem-test-workspace)))))

(defconst tandem-test-timeout 45
  "Seconds any wait may take before the scenario fails, well within the Rust side's kill.
Generous: on a loaded machine (CI's two cores running the other test binaries beside these)
a turn's first model request and its approval took over 20 s; a wait ends as soon as what it
waits for happens, so this only bounds a failure.")

(defconst tandem-test-directory (file-name-directory (or load-file-name buffer-file-name))
  "This folder: the scenarios and the configuration files they load.")

(defvar tandem-test-prompts nil
  "Every minibuffer prompt answered so far, newest first.
Each is a plist: `:prompt' (the text shown), `:collection' (the choices, in the order given),
`:initial' (what the minibuffer held before anything was typed), `:default', `:typed' (the text
typed, nil for only RET) and `:answer' (what the reading function returned).")

(defvar tandem-test-answers nil
  "How to answer the next prompts, in order: `enter' (press RET) or a string to type first.
When the list is empty, RET is pressed.")

(defvar tandem-test-code-action nil
  "The title, or a prefix of it, to pick in a code action menu.")

(defvar tandem-test-messages nil
  "Every `window/showMessage' and `window/logMessage' seen, newest first: (METHOD . MESSAGE).")

(defvar tandem-test-received nil
  "The method of every request and notification the servers sent that Emacs handled, newest
first.")

(defvar tandem-test-buffers nil
  "The buffers a scenario opened, for the failure report.")

;;; Checks and waits

(defun tandem-test-check (condition format-string &rest args)
  "Signal an error with FORMAT-STRING and ARGS unless CONDITION."
  (unless condition
    (error "%s" (apply #'format format-string args))))

(defun tandem-test--fire-idle-timers (idle-since fired)
  "Fire the idle timers due after being idle since IDLE-SINCE, except those in FIRED.
Returns FIRED with the ones fired now added: as in the command loop, an idle timer fires at most
once per idle period."
  (let ((idle (time-subtract nil idle-since)))
    (dolist (timer (copy-sequence timer-idle-list))
      (when (and (memq timer timer-idle-list)
                 (not (memq timer fired))
                 (not (time-less-p idle (timer--time timer))))
        (push timer fired)
        (timer-event-handler timer))))
  fired)

(defun tandem-test--read-pending-messages ()
  "Have each jsonrpc connection (eglot's) read the messages already in its process buffer.
Emacs 28's jsonrpc (1.0.14) reads a chunk of output message by message, and a reply to a
synchronous request (`eglot-code-actions' waits for `workspace/executeCommand') leaves the
filter by `throw': a message that came in the same chunk behind it, such as the request
Tandem's turn sends next (`workspace/applyEdit', `window/showMessageRequest'), stays unread
until more output arrives, and none does while the server waits for its answer.  A user's Emacs
is stuck the same way, rarely (the model's first answer takes seconds, so the messages come in
separate chunks; the replay model answers at once); the scenarios read what arrived, as the
filter would on the next chunk."
  (dolist (process (process-list))
    (when (and (process-get process 'jsonrpc-connection)
               (process-live-p process)
               (process-filter process))
      (funcall (process-filter process) process ""))))

(defun tandem-test-wait (what predicate &optional seconds)
  "Process input until PREDICATE returns non-nil, and return that value.
Fails naming WHAT after SECONDS (default `tandem-test-timeout')."
  (let* ((start (current-time))
         (deadline (time-add start (or seconds tandem-test-timeout)))
         (fired nil)
         value)
    (while (not (setq value (funcall predicate)))
      (when (time-less-p deadline nil)
        (error "Timed out after %ss waiting for %s"
               (or seconds tandem-test-timeout) what))
      (accept-process-output nil 0.05)
      (tandem-test--read-pending-messages)
      (setq fired (tandem-test--fire-idle-timers start fired)))
    value))

(defun tandem-test-shown (text)
  "The first `window/showMessage' seen whose message contains TEXT, or nil."
  (cl-loop for (method . message) in (reverse tandem-test-messages)
           when (and (equal method "window/showMessage")
                     (stringp message)
                     (string-search text message))
           return message))

(defun tandem-test-asked (text)
  "The prompts whose text contains TEXT, oldest first."
  (cl-loop for prompt in (reverse tandem-test-prompts)
           when (string-search text (plist-get prompt :prompt))
           collect prompt))

(defun tandem-test-file-text (path)
  "The text of PATH on disk."
  (with-temp-buffer
    (insert-file-contents path)
    (buffer-string)))

(defun tandem-test-load-config (name)
  "Load NAME from this folder: a configuration file that docs/editors.md shows."
  (load (expand-file-name name tandem-test-directory) nil t))

;;; Answering prompts in the real minibuffer

(defvar tandem-test--reader nil)
(defvar tandem-test--typed nil)
(defvar tandem-test--result nil)
(defvar tandem-test--initial nil)

(defun tandem-test--read-command ()
  "Run `tandem-test--reader' in the minibuffer, typing `tandem-test--typed' over its contents."
  (interactive)
  (minibuffer-with-setup-hook
      (lambda ()
        (setq tandem-test--initial (minibuffer-contents))
        (when tandem-test--typed
          (delete-minibuffer-contents)
          (insert tandem-test--typed)))
    (setq tandem-test--result (funcall tandem-test--reader))))

(define-key global-map (kbd "<f35>") #'tandem-test--read-command)

(defun tandem-test--completing-read (original prompt collection &optional predicate
                                              require-match initial history default
                                              &rest rest)
  "Around `completing-read': record the prompt and answer it as `tandem-test-answers' says.
A code action menu is answered with the entry `tandem-test-code-action' names."
  (let ((choices (if (functionp collection)
                     (all-completions "" collection predicate)
                   (mapcar (lambda (choice) (if (consp choice) (car choice) choice))
                           collection))))
    (if (string-match-p "Pick an action\\|Select code action" prompt)
        (let ((choice (and tandem-test-code-action
                           (cl-find-if (lambda (choice)
                                         (string-prefix-p tandem-test-code-action choice))
                                       choices))))
          (tandem-test-check choice "no code action %S among %S"
                             tandem-test-code-action choices)
          (push (list :prompt prompt :collection choices :answer choice) tandem-test-prompts)
          choice)
      (let* ((how (or (pop tandem-test-answers) 'enter))
             (tandem-test--typed (and (stringp how) how))
             (tandem-test--reader
              (lambda ()
                (apply original prompt collection predicate require-match initial history
                       default rest)))
             (tandem-test--result nil)
             (tandem-test--initial nil))
        (execute-kbd-macro (kbd "<f35> RET"))
        (push (list :prompt prompt :collection choices :initial tandem-test--initial
                    :default default :typed tandem-test--typed :answer tandem-test--result)
              tandem-test-prompts)
        tandem-test--result))))

(advice-add 'completing-read :around #'tandem-test--completing-read)

;; `y-or-n-p' would read stdin in batch: fail loudly instead, naming the question.
(advice-add 'y-or-n-p :override
            (lambda (prompt)
              (push (list :prompt prompt :answer "n") tandem-test-prompts)
              (error "Unexpected y-or-n-p question: %s" prompt)))

;;; Recording what the server sends

(defun tandem-test--record (method message)
  "Record a server request or notification METHOD; MESSAGE is its `message' parameter."
  (push method tandem-test-received)
  (when (member method '("window/showMessage" "window/logMessage"))
    (push (cons method message) tandem-test-messages)))

(with-eval-after-load 'eglot
  (dolist (handler '(eglot-handle-notification eglot-handle-request))
    (advice-add handler :before
                (lambda (_server method &rest params)
                  (tandem-test--record (format "%s" method) (plist-get params :message))))))

(with-eval-after-load 'lsp-mode
  (dolist (handler '(lsp--on-notification lsp--on-request))
    (advice-add handler :before
                (lambda (_workspace message)
                  (let ((params (lsp-get message :params)))
                    (tandem-test--record (lsp-get message :method)
                                         (ignore-errors (lsp-get params :message))))))))

;;; Opening files

(defun tandem-test-open (file)
  "Visit FILE (relative to the workspace) and return its buffer."
  (let ((buffer (find-file-noselect (expand-file-name file))))
    (push buffer tandem-test-buffers)
    buffer))

(defun tandem-test-eglot-open (file)
  "Visit FILE as a user would, so that `eglot-ensure' in its mode hook connects; return it.
`eglot-ensure' connects from `post-command-hook', which runs after the command that visited the
file; batch Emacs runs no commands, so the hook is run here."
  (let ((buffer (tandem-test-open file)))
    (with-current-buffer buffer
      (run-hooks 'post-command-hook)
      (tandem-test-wait (format "eglot to manage %s" file)
                        (lambda () (and (bound-and-true-p eglot--managed-mode)
                                        (eglot-current-server)))))
    buffer))

(defun tandem-test-eglot-code-action (buffer beg end title)
  "Run the code action TITLE (or a prefix of it) offered between BEG and END in BUFFER.
Goes through `eglot-code-actions' as `M-x eglot-code-actions' does, menu included."
  (with-current-buffer buffer
    (let ((tandem-test-code-action title)
          ;; What a keyboard invocation leaves here; a list would make eglot pop up a mouse menu.
          (last-nonmenu-event ?\r))
      (eglot-code-actions beg end nil t))))

;;; lsp-mode

(defun tandem-test-lsp-open (file)
  "Load lsp-mode-init.el, visit FILE with lsp-mode as a user would and return its buffer,
once Tandem (and pylsp beside it, when installed) runs for it.
Before that, lsp-mode is set up for a batch run: no questions about project roots (the
workspace is added as a project in advance) or file watches, no restarts, the session file in
the temporary `user-emacs-directory', and the JSON-RPC traffic logged for the failure report."
  (setq lsp-session-file (expand-file-name "lsp-session" user-emacs-directory)
        lsp-enable-file-watchers nil
        lsp-restart 'ignore
        lsp-keep-workspace-alive nil
        lsp-auto-guess-root nil
        lsp-enable-snippet nil
        lsp-headerline-breadcrumb-enable nil
        lsp-modeline-code-actions-enable nil
        lsp-modeline-diagnostics-enable nil
        lsp-lens-enable nil
        lsp-log-io t)
  (tandem-test-load-config "lsp-mode-init.el")
  (require 'lsp-mode)
  (lsp-workspace-folders-add default-directory)
  (let ((buffer (tandem-test-open file)))
    (with-current-buffer buffer
      (tandem-test-wait "lsp-mode to start Tandem" (lambda () (tandem-test-lsp-workspace 'tandem)))
      (when (executable-find "pylsp")
        (tandem-test-wait "lsp-mode to start pylsp beside Tandem"
                          (lambda () (tandem-test-lsp-workspace 'pylsp)))))
    buffer))

(defun tandem-test-lsp-workspace (server-id)
  "The current buffer's workspace of SERVER-ID, once it is initialized."
  (cl-find-if (lambda (workspace)
                (and (eq (lsp--workspace-server-id workspace) server-id)
                     (eq (lsp--workspace-status workspace) 'initialized)))
              (lsp-workspaces)))

(defun tandem-test-lsp-code-action (buffer title)
  "Run the code action TITLE (or a prefix of it) at the start of BUFFER, as
`M-x lsp-execute-code-action' does."
  (with-current-buffer buffer
    (goto-char (point-min))
    (let ((tandem-test-code-action title))
      (call-interactively #'lsp-execute-code-action))))

;;; Running a scenario

(defun tandem-test--tail (text lines)
  "The last LINES lines of TEXT."
  (let ((all (split-string (or text "") "\n")))
    (string-join (last all lines) "\n")))

(defun tandem-test--buffer-tail (buffer-or-name lines)
  (let ((buffer (and buffer-or-name (get-buffer buffer-or-name))))
    (if (buffer-live-p buffer)
        (with-current-buffer buffer
          (tandem-test--tail (buffer-substring-no-properties (point-min) (point-max)) lines))
      "(none)")))

(defun tandem-test--report (reason)
  "What helps to debug a failure with REASON."
  (let ((log (getenv "TANDEM_LOG_FILE")))
    (concat
     "FAIL: " reason "\n"
     "--- prompts (oldest first) ---\n"
     (mapconcat #'prin1-to-string (reverse tandem-test-prompts) "\n") "\n"
     "--- server requests and notifications handled (oldest first) ---\n"
     (string-join (reverse tandem-test-received) " ") "\n"
     "--- messages (oldest first) ---\n"
     (mapconcat #'prin1-to-string (reverse tandem-test-messages) "\n") "\n"
     (mapconcat (lambda (buffer)
                  (if (buffer-live-p buffer)
                      (format "--- buffer %s%s ---\n%s\n" (buffer-name buffer)
                              (if (buffer-modified-p buffer) " (modified)" "")
                              (with-current-buffer buffer
                                (buffer-substring-no-properties (point-min) (point-max))))
                    ""))
                tandem-test-buffers "")
     (mapconcat (lambda (buffer)
                  (format "--- %s (tail) ---\n%s\n" (buffer-name buffer)
                          (tandem-test--buffer-tail buffer 80)))
                (cl-remove-if-not (lambda (buffer)
                                    (string-match-p "EGLOT\\|lsp-log\\|lsp-io\\|stderr"
                                                    (buffer-name buffer)))
                                  (buffer-list))
                "")
     "--- *Messages* (tail) ---\n" (tandem-test--buffer-tail "*Messages*" 40) "\n"
     "--- server log (tail) ---\n"
     (if (and log (file-readable-p log)) (tandem-test--tail (tandem-test-file-text log) 40)
       "(no server log)")
     "\n")))

(defun tandem-test--shutdown ()
  "Ask every language server to quit, as quitting Emacs would."
  (when (featurep 'eglot)
    (dolist (servers (hash-table-values eglot--servers-by-project))
      (dolist (server servers)
        (ignore-errors (eglot-shutdown server nil 5)))))
  (when (featurep 'lsp-mode)
    (dolist (workspace (lsp--session-workspaces (lsp-session)))
      (ignore-errors (lsp-workspace-shutdown workspace)))))

(defun tandem-test-run (body)
  "Run the scenario BODY, then exit Emacs: 0 when it returns, 1 when it signals."
  (condition-case err
      (progn
        (funcall body)
        (tandem-test--shutdown)
        (princ "ok\n")
        (kill-emacs 0))
    (error
     (princ (tandem-test--report (error-message-string err)) #'external-debugging-output)
     (kill-emacs 1))))


;;; Saving before commands (eglot-save-before-command.el, lsp-mode-save-before-command.el)

(defconst tandem-test-fixed
  "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
  "calc.py once the agent fixed `add'.")

(defvar tandem-test-saves nil
  "Each `tandem/saveDocuments' request handled, newest first: (URIS . ANSWER).")

(defun tandem-test-check-saved (buffer uri-to-path)
  "Check, once the turn answered, that BUFFER holds the fix, was saved when Tandem asked
\(a `tandem/saveDocuments' answer names it; URI-TO-PATH reads its URIs), and is not modified."
  (tandem-test-check (with-current-buffer buffer (equal (buffer-string) tandem-test-fixed))
                     "the fix is not in the buffer")
  (tandem-test-check (cl-some (lambda (save)
                                (cl-some (lambda (uri)
                                           (eq (find-buffer-visiting (funcall uri-to-path uri))
                                               buffer))
                                         (plist-get (cdr save) :saved)))
                              tandem-test-saves)
                     "no tandem/saveDocuments request was answered with calc.py saved: %S"
                     tandem-test-saves)
  (tandem-test-check (equal (tandem-test-file-text "calc.py") tandem-test-fixed)
                     "calc.py on disk is not the fixed buffer: %S"
                     (tandem-test-file-text "calc.py"))
  (tandem-test-check (not (buffer-modified-p buffer))
                     "the buffer is still modified after Tandem had it saved")
  (princ (format "tandem/saveDocuments (uris . answer), oldest first: %S\n"
                 (reverse tandem-test-saves))))

;;; helpers.el ends here
