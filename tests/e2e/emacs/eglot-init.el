;; Tandem as the server eglot starts for Python buffers (eglot runs one server per major mode).
;; It declares `saveDocuments': before the agent runs a command, a search or an MCP tool, Tandem
;; asks Emacs to save the buffers the agent changed, so that what runs reads the agent's changes.
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '(python-mode . ("tandem" "lsp" :initializationOptions
                                (:clientCapabilities (:saveDocuments t)))))
  (cl-defmethod eglot-handle-request
    (_server (_method (eql 'tandem/saveDocuments)) &key uris &allow-other-keys)
    "Save the modified buffers visiting URIS, as they are; answer the URIs saved."
    (let (saved)
      (dolist (uri (append uris nil))
        (condition-case err
            (let ((buffer (find-buffer-visiting (eglot--uri-to-path uri))))
              (when (and buffer (buffer-modified-p buffer))
                (with-current-buffer buffer (save-buffer))
                (push uri saved)))
          (error (message "Tandem: cannot save %s: %s" uri (error-message-string err)))))
      (list :saved (vconcat (nreverse saved))))))
(add-hook 'python-mode-hook #'eglot-ensure)
;; Tandem's edits land unsaved and undo takes them back, and it asks first unless its approval
;; mode says otherwise: a second yes-or-no question for each of them adds nothing.
(setq eglot-confirm-server-initiated-edits nil)
