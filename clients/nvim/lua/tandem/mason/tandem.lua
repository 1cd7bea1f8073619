-- Tandem's mason.nvim package, as a Lua table: clients/nvim/mason/package.yaml, the entry for
-- mason's registry, word for word (clients/nvim/mason/check.sh fails when they differ).
return {
  name = 'tandem',
  description = [[
A coding agent that works in your editor through a language server: code actions, `tandem:` comment
instructions, inline completions, a chat, approvals and reviewable edits, with Anthropic, Gemini,
OpenAI-compatible or local Ollama models.
]],
  homepage = 'https://github.com/tandem-lsp/tandem',
  licenses = { 'MIT', 'Apache-2.0' },
  languages = {},
  categories = { 'LSP' },
  source = {
    id = 'pkg:github/tandem-lsp/tandem@v0.1.0',
    asset = {
      { target = 'darwin_arm64', file = 'tandem-{{ version | strip_prefix "v" }}-aarch64-apple-darwin.tar.gz' },
      { target = 'darwin_x64', file = 'tandem-{{ version | strip_prefix "v" }}-x86_64-apple-darwin.tar.gz' },
      { target = 'linux_arm64', file = 'tandem-{{ version | strip_prefix "v" }}-aarch64-unknown-linux-musl.tar.gz' },
      { target = 'linux_x64', file = 'tandem-{{ version | strip_prefix "v" }}-x86_64-unknown-linux-musl.tar.gz' },
    },
  },
  bin = {
    tandem = 'tandem',
    ['tandem-confine'] = 'tandem-confine',
  },
}
