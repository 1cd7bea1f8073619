;; Your settings for Tandem, the shape of settings.json, sent when eglot starts it: no project
;; can change them. This entry, added last, is the one eglot uses for Python, so it declares
;; `saveDocuments' again.
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '(python-mode . ("tandem" "lsp" :initializationOptions
                                (:clientCapabilities (:saveDocuments t)
                                 :settings (:approval (:mode "auto_edit")))))))
