-- Engram does nothing until require('engram').setup{} is called (lazy-loading friendly).
if vim.g.loaded_engram then
  return
end
vim.g.loaded_engram = true
