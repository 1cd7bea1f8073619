;; Tandem as an add-on server: lsp-mode runs it beside the language server it picks for a buffer.
(with-eval-after-load 'lsp-mode
  (defun tandem-lsp-execute (command)
    "Send Tandem's COMMAND to Tandem alone, without waiting for the answer.
Otherwise lsp-mode sends it to every server of the buffer, and waits for the answer in a way
that loses the messages arriving with it (emacs-lsp/lsp-mode#4323)."
    (with-lsp-workspace (lsp-find-workspace 'tandem (buffer-file-name))
      (lsp-request-async "workspace/executeCommand"
                         (list :command (lsp:command-command command)
                               :arguments (lsp:command-arguments? command))
                         #'ignore
                         :error-handler
                         (lambda (error)
                           (message "Tandem: %s" (lsp:json-error-message error))))))
  (defun tandem-lsp-save-documents (_workspace params)
    "Save the modified buffers visiting the URIs in PARAMS, as they are; answer the URIs saved.
Tandem asks before the agent runs a command, a search or an MCP tool, so that what runs reads
the agent's changes."
    (let (saved)
      (dolist (uri (append (lsp-get params :uris) nil))
        (condition-case err
            (let ((buffer (find-buffer-visiting (lsp--uri-to-path uri))))
              (when (and buffer (buffer-modified-p buffer))
                (with-current-buffer buffer (save-buffer))
                (push uri saved)))
          (error (message "Tandem: cannot save %s: %s" uri (error-message-string err)))))
      (list :saved (vconcat (nreverse saved)))))
  (lsp-register-client
   (make-lsp-client
    :server-id 'tandem
    :new-connection (lsp-stdio-connection '("tandem" "lsp"))
    :activation-fn (lambda (_file-name _mode) t)
    :add-on? t
    :initialization-options '(:clientCapabilities (:saveDocuments t))
    :request-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (puthash "tandem/saveDocuments" #'tandem-lsp-save-documents handlers)
      handlers)
    :action-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (dolist (name '("tandem.runInstruction" "tandem.fixDiagnostic" "tandem.ask"
                      "tandem.explain" "tandem.writeTests" "tandem.document"))
        (puthash name #'tandem-lsp-execute handlers))
      handlers))))
(add-hook 'python-mode-hook #'lsp)
