--- :checkhealth engram: the server command, that it runs Engram, `engram doctor`, the client.
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
  local fix = {
    'Install Engram: ' .. engram.install_hint,
    "then set server_path = '~/.local/bin/engram' in require('engram').setup{}",
  }
  if vim.fn.executable(cmd[1]) == 0 then
    health.error(cmd[1] .. ' not found (server command: ' .. table.concat(cmd, ' ') .. ')', fix)
    return
  end
  health.ok('server command: ' .. table.concat(cmd, ' '))
  local python = cmd[2] == '-m' or (cmd[2] == '-P' and cmd[3] == '-m')
  local probe = python and { cmd[1], '-P', '-c', 'import engram, sys; sys.stdout.write(engram.__version__)' }
    or { cmd[1], '--version' }
  local out = vim.fn.system(probe)
  if vim.v.shell_error ~= 0 then
    local what = python and ('the engram package is not installed for ' .. cmd[1]) or (cmd[1] .. ' --version failed')
    health.error(what, fix)
    return
  end
  health.ok('engram ' .. vim.trim(out):gsub('^engram%s+', ''))
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  -- the workspace the server serves for the buffer checkhealth was run from (else any):
  -- `engram doctor` without --workspace reports on Neovim's working directory, which need
  -- not be a workspace (`nvim ~/src/app/main.py` from $HOME reported on $HOME, and created
  -- ~/.engram there)
  local alternate = vim.fn.bufnr('#')
  local engram = require('engram')
  local here = alternate > 0 and engram.workspace_root(alternate) or nil
  if here and not engram.is_set_up(here) then
    -- the server starts only where Engram was set up (docs/neovim.md)
    health.info(here .. ' is not set up for Engram (no .engram/ nor .engram-team/): no server, nothing written there')
    health.info('to use Engram there: :EngramSetup from one of its files, or `engram index` in it')
    return
  end
  local clients = alternate > 0 and get({ name = 'engram', bufnr = alternate }) or {}
  if #clients == 0 then
    clients = get({ name = 'engram' })
  end
  local root = clients[1] and clients[1].config and clients[1].config.root_dir
  if root then
    local doctor = python and { cmd[1], '-P', '-m', 'engram', 'doctor' } or { cmd[1], 'doctor' }
    vim.list_extend(doctor, { '--workspace', root })
    for _, line in ipairs(vim.split(vim.fn.system(doctor), '\n', { trimempty = true })) do
      health.info(line)
    end
  end
  if #clients > 0 then
    health.ok('server running (client id ' .. clients[1].id .. ') for ' .. tostring(root))
    return
  end
  health.warn('server not attached yet: open a file inside a git repository set up for Engram (then `engram doctor` runs here for it)')
end

return M
