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
  (lsp-register-client
   (make-lsp-client
    :server-id 'tandem
    :new-connection (lsp-stdio-connection '("tandem" "lsp"))
    :activation-fn (lambda (_file-name _mode) t)
    :add-on? t
    :action-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (dolist (name '("tandem.runInstruction" "tandem.fixDiagnostic" "tandem.ask"
                      "tandem.explain" "tandem.writeTests" "tandem.document"))
        (puthash name #'tandem-lsp-execute handlers))
      handlers))))
(add-hook 'python-mode-hook #'lsp)
