;; Tandem as the server eglot starts for Python buffers (eglot runs one server per major mode).
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '(python-mode . ("tandem" "lsp"))))
(add-hook 'python-mode-hook #'eglot-ensure)
;; Tandem's edits land unsaved and undo takes them back, and it asks first unless its approval
;; mode says otherwise: a second yes-or-no question for each of them adds nothing.
(setq eglot-confirm-server-initiated-edits nil)
