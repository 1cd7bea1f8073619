;;; lsp-mode-save-before-command.el --- lsp-mode saves the agent's edit before its command runs  -*- lexical-binding: t -*-

;; Workspace (from tests/e2e/emacs.rs): calc.py, whose `add' subtracts, and test_calc.py, which
;; checks that add(2, 3) is 5; approval mode `yolo'.  The replay script reads calc.py, fixes `add'
;; in it, runs `python3 -m unittest' with `shell' and answers "Fixed add; the tests pass.".  The
;; fix lands in the buffer, unsaved; before the command runs, Tandem asks Emacs to save it
;; (`tandem/saveDocuments', which lsp-mode-init.el declares and handles), so the command tests
;; the fixed file.  The code action only starts the turn: the script decides what the turn does.
;; tests/e2e/emacs.rs checks what the model was told of the command in the saved session.

;;; Code:

(load (expand-file-name "helpers.el" (file-name-directory load-file-name)) nil t)

(tandem-test-run
 (lambda ()
   (let* ((buffer (tandem-test-lsp-open "calc.py"))
          (workspace (with-current-buffer buffer (tandem-test-lsp-workspace 'tandem)))
          (declared (plist-get (lsp--client-initialization-options
                                (lsp--workspace-client workspace))
                               :clientCapabilities)))
     (tandem-test-check (eq (plist-get declared :saveDocuments) t)
                        "lsp-mode-init.el does not declare saveDocuments: %S" declared)
     (advice-add 'tandem-lsp-save-documents :around
                 (lambda (save workspace params)
                   (let ((answer (funcall save workspace params)))
                     (push (cons (lsp-get params :uris) answer) tandem-test-saves)
                     answer)))
     (tandem-test-lsp-code-action buffer "Explain this")
     (tandem-test-wait "the turn's answer in a message"
                       (lambda () (tandem-test-shown "Fixed add; the tests pass.")))
     (tandem-test-check-saved buffer #'lsp--uri-to-path))))

;;; lsp-mode-save-before-command.el ends here
