--- :checkhealth engram
local M = {}

function M.check()
  local health = vim.health
  health.start('engram')
  if vim.fn.has('nvim-0.8') == 0 then
    health.error('Neovim 0.8 or newer is required')
    return
  end
  health.ok('Neovim ' .. tostring(vim.version()))
  local engram = require('engram')
  local cmd = engram.server_cmd()
  if vim.fn.executable(cmd[1]) == 0 then
    health.error(cmd[1] .. ' not found', { 'Install Python 3.11+ or set python = "/path/to/python" in setup{}' })
    return
  end
  health.ok('interpreter: ' .. vim.fn.exepath(cmd[1]))
  if cmd[2] == '-m' then
    local out = vim.fn.system({ cmd[1], '-c', 'import engram, sys; sys.stdout.write(engram.__version__)' })
    if vim.v.shell_error ~= 0 then
      health.error('the engram package is not installed for ' .. cmd[1], {
        cmd[1] .. ' -m pip install engram   (or pip install -e . in the Engram repository)',
      })
      return
    end
    health.ok('engram ' .. out)
    local doctor = vim.fn.system({ cmd[1], '-m', 'engram', 'doctor' })
    for _, line in ipairs(vim.split(doctor, '\n', { trimempty = true })) do
      health.info(line)
    end
  end
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local clients = get({ name = 'engram' })
  if #clients > 0 then
    health.ok('server running (client id ' .. clients[1].id .. ')')
  else
    health.warn('server not attached yet: open a file inside a git repository')
  end
end

return M
