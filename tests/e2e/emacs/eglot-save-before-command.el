;;; eglot-save-before-command.el --- eglot saves the agent's edit before its command runs  -*- lexical-binding: t -*-

;; Workspace (from tests/e2e/emacs.rs): calc.py, whose `add' subtracts, and test_calc.py, which
;; checks that add(2, 3) is 5; approval mode `yolo'.  The replay script reads calc.py, fixes `add'
;; in it, runs `python3 -m unittest' with `shell' and answers "Fixed add; the tests pass.".  The
;; fix lands in the buffer, unsaved; before the command runs, Tandem asks Emacs to save it
;; (`tandem/saveDocuments', which eglot-init.el declares and handles), so the command tests the
;; fixed file.  The code action only starts the turn: the script decides what the turn does.
;; tests/e2e/emacs.rs checks what the model was told of the command in the saved session.

;;; Code:

(load (expand-file-name "helpers.el" (file-name-directory load-file-name)) nil t)

(tandem-test-run
 (lambda ()
   (tandem-test-load-config "eglot-init.el")
   (require 'eglot)
   (advice-add 'eglot-handle-request :around
               (lambda (handle server method &rest params)
                 (let ((answer (apply handle server method params)))
                   (when (eq method 'tandem/saveDocuments)
                     (push (cons (plist-get params :uris) answer) tandem-test-saves))
                   answer)))
   (let* ((buffer (tandem-test-eglot-open "calc.py"))
          (server (with-current-buffer buffer (eglot-current-server)))
          (declared (plist-get (eglot-initialization-options server) :clientCapabilities)))
     (tandem-test-check (eq (plist-get declared :saveDocuments) t)
                        "eglot-init.el does not declare saveDocuments: %S" declared)
     (with-current-buffer buffer
       (goto-char (point-min))
       (tandem-test-eglot-code-action buffer (point) (line-end-position 2) "Explain this"))
     (tandem-test-wait "the turn's answer in a message"
                       (lambda () (tandem-test-shown "Fixed add; the tests pass.")))
     (tandem-test-check-saved buffer #'eglot--uri-to-path))))

;;; eglot-save-before-command.el ends here
