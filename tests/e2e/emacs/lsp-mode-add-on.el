;;; lsp-mode-add-on.el --- lsp-mode runs Tandem as an add-on server; approvals and edits  -*- lexical-binding: t -*-

;; Workspace (from tests/e2e/emacs.rs): calc.py; approval mode `default'.  Tandem is registered
;; with lsp-mode-init.el, the configuration docs/editors.md shows, as an add-on server, so it
;; starts beside lsp-mode's Python server when one (pylsp) is installed and alone otherwise.
;; The replay script plays two turns of "Document this": each edits `add'.  The first approval
;; prompt is answered with Enter, which must reject the edit; the second with "Allow once",
;; after which the edit lands in the buffer, unsaved.  "Ask Tandem…" then shows that the
;; instruction goes in a `# tandem:' comment.
;;
;; lsp-mode releases before emacs-lsp/lsp-mode#5057 lose the messages that arrive in the same
;; read as the answer to a request they wait for (#4323), and `lsp-execute-code-action' waits for
;; the answer to `workspace/executeCommand', which the server's first message of the turn follows
;; at once.  lsp-mode-init.el sends Tandem's commands without waiting; should a turn hang anyway,
;; this scenario says whether that is why.

;;; Code:

(load (expand-file-name "helpers.el" (file-name-directory load-file-name)) nil t)

(defconst tandem-test-original (tandem-test-file-text "calc.py"))

(defconst tandem-test-expected
  "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")

(tandem-test-run
 (lambda ()
   (setq tandem-test-answers '(enter "Allow once"))
   (let ((buffer (tandem-test-lsp-open "calc.py")))
     (tandem-test-lsp-code-action buffer "Document this")
     (condition-case err
         (tandem-test-wait "the first turn's answer"
                           (lambda () (tandem-test-shown "I left calc.py alone.")))
       (error
        (if (member "window/workDoneProgress/create" tandem-test-received)
            (signal (car err) (cdr err))
          (error "%s: %s" (error-message-string err)
                 (concat "lsp-mode never handled the window/workDoneProgress/create that "
                         "follows the workspace/executeCommand answer (lsp-mode#4323)")))))
     (let* ((asked (tandem-test-asked "Tandem wants to"))
            (prompt (car asked)))
       (tandem-test-check (= (length asked) 1) "expected one approval prompt, got %d" (length asked))
       (tandem-test-check (equal (car (plist-get prompt :collection)) "Reject")
                          "the first choice offered is not Reject: %S" (plist-get prompt :collection))
       (tandem-test-check (with-current-buffer buffer (equal (buffer-string) tandem-test-original))
                          "Enter (answer %S) did not reject the edit" (plist-get prompt :answer))
       (princ (format "lsp-mode prompt: %S\ncollection: %S\ninitial: %S\ndefault: %S\nEnter answered: %S\n"
                      (plist-get prompt :prompt) (plist-get prompt :collection)
                      (plist-get prompt :initial) (plist-get prompt :default)
                      (plist-get prompt :answer))))

     (tandem-test-lsp-code-action buffer "Document this")
     (tandem-test-wait "the docstring in the buffer"
                       (lambda () (with-current-buffer buffer
                                    (equal (buffer-string) tandem-test-expected))))
     (tandem-test-wait "the second turn's answer" (lambda () (tandem-test-shown "Documented add.")))
     (tandem-test-check (equal (plist-get (car tandem-test-prompts) :answer) "Allow once")
                        "the second prompt was not answered Allow once: %S" (car tandem-test-prompts))
     (tandem-test-check (buffer-modified-p buffer) "the edit should leave the buffer modified (unsaved)")
     (tandem-test-check (equal (tandem-test-file-text "calc.py") tandem-test-original)
                        "calc.py changed on disk; the edit belongs in the buffer only")

     ;; lsp-mode cannot prompt for an instruction either: "Ask Tandem…" shows how to write one.
     (tandem-test-lsp-code-action buffer "Ask Tandem")
     (tandem-test-wait "Ask Tandem… to point to a `# tandem:' comment"
                       (lambda ()
                         (with-current-buffer "*Messages*"
                           (save-excursion
                             (goto-char (point-min))
                             (search-forward "# tandem:" nil t))))))))

;;; lsp-mode-add-on.el ends here
