;;; eglot-diagnostics.el --- the agent's edit is told the errors it caused, in eglot  -*- lexical-binding: t -*-

;; Workspace (from tests/e2e/emacs.rs): calc.py with the user's own type error; approval mode
;; `yolo'.  The replay script reads calc.py, makes an edit that adds a type error, makes one that
;; fixes it, and answers "Checked the types.".  eglot forwards no diagnostics (plain LSP has no
;; way to), so Tandem checks the edits with the pyright it starts itself (on PATH for Tandem).
;; The code action only starts the turn; tests/e2e/emacs.rs checks what the model was told of
;; each edit in the saved session.

;;; Code:

(load (expand-file-name "helpers.el" (file-name-directory load-file-name)) nil t)

(tandem-test-run
 (lambda ()
   (tandem-test-load-config "eglot-init.el")
   (require 'eglot)
   (let ((buffer (tandem-test-eglot-open "calc.py")))
     (with-current-buffer buffer
       (goto-char (point-min))
       (tandem-test-eglot-code-action buffer (point) (line-end-position 2) "Explain this"))
     (tandem-test-wait "the turn's answer in a message"
                       (lambda () (tandem-test-shown "Checked the types."))
                       45))))

;;; eglot-diagnostics.el ends here
