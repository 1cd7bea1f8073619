-- A mason.nvim registry holding Tandem's package, for use until `tandem` is in mason's core
-- registry: require('mason').setup({ registries = { 'lua:tandem.mason', 'github:mason-org/mason-registry' } })
-- (see :help tandem-install). mason requires this index, then each package module it names.
return {
  tandem = 'tandem.mason.tandem',
}
