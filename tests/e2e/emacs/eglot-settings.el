;; Your settings for Tandem, the shape of settings.json, sent when eglot starts it: no project
;; can change them (this entry, added last, is the one eglot uses for Python).
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '(python-mode . ("tandem" "lsp" :initializationOptions
                                (:settings (:approval (:mode "auto_edit")))))))
