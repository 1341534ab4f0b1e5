--- Engram for Neovim: starts `engram serve`, and adds commands to search, teach, review
--- and inspect memories. Diagnostics and hover come through Neovim's own LSP client.
local M = {}

local defaults = {
  --- The `engram` executable (e.g. ~/.local/bin/engram after `pipx install`); `vim.g.engram_path`.
  server_path = nil,
  --- Or a Python interpreter that has the engram package; `vim.g.engram_python`.
  python = nil,
  --- Full command; default: server_path, python, `engram` on PATH, ~/.local/bin/engram, python3.
  cmd = nil,
  --- Files that mark a workspace root.
  root_markers = { '.git', '.engram' },
  --- nil = attach to every filetype.
  filetypes = nil,
  --- Sent as initializationOptions and answered to workspace/configuration (section engram).
  settings = {},
  --- Where list results go: 'quickfix' or 'float'.
  results = 'quickfix',
}

M.config = vim.deepcopy(defaults)

--- How Engram is installed so an editor can start it (docs/install.md).
M.install_hint = 'pipx install /path/to/engram   (or: uv tool install /path/to/engram)'

--- The command line that starts the server (also used by :checkhealth), in this order:
--- `cmd`, `server_path`, `python` (or `vim.g.engram_path` / `vim.g.engram_python`), then the
--- first that exists of `engram` on PATH, ~/.local/bin/engram, and python3 -P -m engram (-P: the
--- working directory, a repository, stays off sys.path; docs/security.md "Python children").
function M.server_cmd()
  if M.config.cmd then
    return M.config.cmd
  end
  local path = M.config.server_path or vim.g.engram_path
  if path then
    return { vim.fn.expand(path), 'serve' }
  end
  local python = M.config.python or vim.g.engram_python
  if python then
    return { vim.fn.expand(python), '-P', '-m', 'engram', 'serve' }
  end
  if vim.fn.executable('engram') == 1 then
    return { vim.fn.exepath('engram'), 'serve' }
  end
  local user_bin = vim.fn.expand('~/.local/bin/engram')
  if vim.fn.executable(user_bin) == 1 then
    return { user_bin, 'serve' }
  end
  return { 'python3', '-P', '-m', 'engram', 'serve' }
end

--- JSON null arrives as vim.NIL (truthy userdata): read optional fields through this.
local function get(value)
  if value == vim.NIL then
    return nil
  end
  return value
end
M.get = get

local function has_new_lsp_config()
  return vim.fn.has('nvim-0.11') == 1 and vim.lsp.config ~= nil and vim.lsp.enable ~= nil
end

local function engram_client(bufnr)
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local clients = get({ name = 'engram', bufnr = bufnr })
  if #clients == 0 then
    clients = get({ name = 'engram' })
  end
  return clients[1]
end

local function notify(msg, level)
  vim.notify('Engram: ' .. msg, level or vim.log.levels.INFO)
end

--- Run an Engram executeCommand and call `on_result(result)`; errors are shown, not raised.
function M.execute(command, args, on_result, bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = engram_client(bufnr)
  if not client then
    notify('the server is not running in this buffer (see :checkhealth engram)', vim.log.levels.ERROR)
    return
  end
  M.execute_on(client, command, args, on_result, bufnr)
end

--- M.execute on a given client (:EngramSetup's, before any buffer is attached to it).
function M.execute_on(client, command, args, on_result, bufnr)
  -- an empty Lua table encodes as [] and the server wants an object: send {} explicitly
  if args == nil or (type(args) == 'table' and next(args) == nil) then
    args = vim.empty_dict()
  end
  local params = { command = command, arguments = { args } }
  local handler = function(err, result)
    if err then
      -- the server's line already names the command ("engram.flag: no memory with id …"):
      -- said once, not "engram.flag failed: engram.flag: …"
      local message = err.message or vim.inspect(err)
      if message:sub(1, #command + 2) == command .. ': ' then
        message = message:sub(#command + 3)
      end
      notify(command .. ' failed: ' .. message, vim.log.levels.ERROR)
      return
    end
    if on_result then
      local ok, problem = pcall(on_result, get(result))
      if not ok then
        notify(command .. ': could not show the result: ' .. tostring(problem), vim.log.levels.ERROR)
      end
    end
  end
  if vim.fn.has('nvim-0.11') == 1 then
    client:request('workspace/executeCommand', params, handler, bufnr)
  else
    client.request('workspace/executeCommand', params, handler, bufnr)
  end
end

local function relpath(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local client = engram_client(bufnr)
  local root = client and client.config and client.config.root_dir
  if root and name:sub(1, #root + 1) == root .. '/' then
    return name:sub(#root + 2)
  end
  return name
end

--- The buffer's file for a command about "this file", or nil with a warning: from the
--- quickfix list (where :EngramSearch leaves the cursor), help or a scratch buffer the
--- server got an empty path and answered "give a file or a query" / "is the workspace itself".
local function file_of(bufnr, command)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    notify(command .. ': this window shows no file; run it from a file\'s window', vim.log.levels.WARN)
    return nil
  end
  return relpath(bufnr)
end

--- Memories out of any of the server's list shapes.
local function memory_list(result)
  if type(result) ~= 'table' then
    return {}
  end
  local list = result
  if not vim.islist(result) then
    list = get(result.memories) or get(result.items) or get(result.hits) or get(result.results) or {}
  end
  local out = {}
  for _, raw in ipairs(list) do
    local mem = type(raw) == 'table' and (get(raw.memory) or raw) or nil
    if type(mem) == 'table' and get(mem.id) then
      table.insert(out, { memory = mem, stale = get(raw.stale) == true, citation = get(raw.citation) })
    end
  end
  return out
end

--- Where a memory points: its first anchor (a file-level anchor has no line), else a related file.
local function location(mem)
  local anchors = get(mem.anchors) or {}
  local anchor = anchors[1]
  if type(anchor) == 'table' and get(anchor.file) then
    local start = get(anchor.start_line)
    return anchor.file, (type(start) == 'number' and start or 0) + 1
  end
  local related = get(mem.related_files) or {}
  if type(related[1]) == 'string' then
    return related[1], 1
  end
  return nil, 1
end

local function float(lines, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = filetype or 'markdown'
  vim.bo[buf].bufhidden = 'wipe'
  local width = math.min(100, math.floor(vim.o.columns * 0.8))
  local height = math.min(#lines + 1, math.floor(vim.o.lines * 0.7))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = math.max(height, 1),
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = 'rounded',
    title = ' Engram ',
  })
  vim.keymap.set('n', 'q', function()
    vim.api.nvim_win_close(win, true)
  end, { buffer = buf, nowait = true })
  return buf, win
end

--- Show memories in the quickfix list (or a float), with their citation ids.
function M.show_memories(title, result)
  local items, lines = {}, {}
  local root = (engram_client(0) or { config = {} }).config.root_dir or vim.fn.getcwd()
  for _, hit in ipairs(memory_list(result)) do
    local mem = hit.memory
    local file, lnum = location(mem)
    local content = (get(mem.content) or ''):gsub('\n', ' ')
    local text = string.format('[%s %s] %s%s', get(mem.type) or '?', mem.id, content,
      hit.stale and ' (stale)' or '')
    table.insert(lines, text)
    table.insert(items, {
      filename = file and (root .. '/' .. file) or nil,
      lnum = lnum,
      text = text,
      user_data = { id = mem.id },
    })
  end
  if M.config.results == 'float' then
    float(#lines > 0 and lines or { 'No memories.' })
  else
    vim.fn.setqflist({}, ' ', { title = 'Engram: ' .. title, items = items })
    if #items > 0 then
      vim.cmd('copen')
    else
      notify('no memories for ' .. title)
    end
  end
  return items
end

function M.search(query)
  M.execute('engram.search', { query = query, k = 20 }, function(result)
    M.show_memories('search "' .. query .. '"', result)
  end)
end

function M.review()
  M.execute('engram.review', {}, function(result)
    M.show_memories('review queue', result)
  end)
end

function M.context(query)
  local bufnr = vim.api.nvim_get_current_buf()
  local args = { query = query }
  if not query or query == '' then
    args = { file = file_of(bufnr, ':EngramContext (or give a query)') }
    if not args.file then
      return
    end
  end
  M.execute('engram.context', args, function(result)
    local text = type(result) == 'table' and get(result.text) or nil
    float(vim.split((text and text ~= '') and text or 'No context.', '\n'))
  end, bufnr)
end

--- The files an impact report names, as quickfix items with the reason for each.
function M.impact_items(report, root)
  local items = {}
  local function add(file, lnum, text)
    if type(file) == 'string' and file ~= '' then
      table.insert(items, { filename = root .. '/' .. file, lnum = lnum or 1, text = text })
    end
  end
  for _, d in ipairs(get(report.direct_dependents) or {}) do
    add(get(d.file), 1, 'dependent: imports it')
  end
  for _, d in ipairs(get(report.transitive_dependents) or {}) do
    local path = get(d.path) or {}
    local via = #path > 2 and (' via ' .. table.concat(vim.list_slice(path, 2, #path - 1), ' -> ')) or ''
    add(get(d.file), 1, 'dependent' .. via)
  end
  for _, r in ipairs(get(report.symbol_references) or {}) do
    add(get(r.file), get(r.line), 'reference (' .. tostring(get(r.kind) or '?') .. ')')
  end
  for _, c in ipairs(get(report.cochange) or {}) do
    add(get(c.file), 1, ('usually changes with it: %d%% of its commits (%d)'):format(
      math.floor((get(c.confidence) or 0) * 100 + 0.5), get(c.support) or 0))
  end
  for _, t in ipairs(get(report.tests) or {}) do
    add(t, 1, 'test to run')
  end
  return items
end

function M.impact()
  local bufnr = vim.api.nvim_get_current_buf()
  local target = file_of(bufnr, ':EngramImpact')
  if not target then
    return
  end
  M.execute('engram.impact', { file = target }, function(result)
    local report = type(result) == 'table' and result or {}
    local root = (engram_client(bufnr) or { config = {} }).config.root_dir or vim.fn.getcwd()
    local items = M.impact_items(report, root)
    local summary = get(report.summary) or ''
    local title = 'Engram: impact of ' .. target .. (summary ~= '' and (': ' .. summary) or '')
    if M.config.results == 'float' then
      local lines = { title, '' }
      for _, item in ipairs(items) do
        table.insert(lines, ('%s: %s'):format(item.filename:sub(#root + 2), item.text))
      end
      float(lines)
      return
    end
    vim.fn.setqflist({}, ' ', { title = title, items = items })
    if #items > 0 then
      vim.cmd('copen')
    end
    notify(('impact of %s: %s'):format(target, summary ~= '' and summary or 'nothing depends on it yet'))
  end, bufnr)
end

--- Remember the lines line1..line2 (1-based) of the current buffer.
function M.remember(line1, line2, mtype, text)
  local bufnr = vim.api.nvim_get_current_buf()
  local file = file_of(bufnr, ':EngramRemember')
  if not file then
    return
  end
  local selected = vim.api.nvim_buf_get_lines(bufnr, line1 - 1, line2, false)
  local send = function(content)
    if not content or vim.trim(content) == '' then
      return
    end
    M.execute('engram.remember', {
      text = content,
      type = mtype or 'gotcha',
      file = file,
      start_line = line1 - 1,
      end_line = line2 - 1,
    }, function(result)
      local r = type(result) == 'table' and result or {}
      local id = get(r.id) or (type(get(r.memory)) == 'table' and get(r.memory.id)) or '?'
      local note = get(r.merged) == true and ('merged into ' .. id) or ('remembered ' .. id)
      local redacted = get(r.redactions) or {}
      if #redacted > 0 then
        note = note .. ' (redacted: ' .. table.concat(redacted, ', ') .. ': rotate it)'
      end
      notify(note)
    end, bufnr)
  end
  if text and text ~= '' then
    send(text)
  else
    vim.ui.input({ prompt = 'Engram ' .. (mtype or 'gotcha') .. ': ', default = vim.trim(selected[1] or '') }, send)
  end
end

--- The Engram diagnostic under the cursor (its data carries the memory id).
--- The Engram memories of the diagnostics on the cursor's line: { { id, message }, … }.
function M.memories_at_cursor()
  local lnum = vim.api.nvim_win_get_cursor(0)[1] - 1
  local found, seen = {}, {}
  for _, d in ipairs(vim.diagnostic.get(0, { lnum = lnum })) do
    if d.source == 'engram' then
      local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data
      if type(data) == 'table' and data.id and not seen[data.id] then
        seen[data.id] = true
        table.insert(found, { id = data.id, message = d.message })
      end
    end
  end
  return found
end

function M.memory_at_cursor()
  local found = M.memories_at_cursor()
  return found[1] and found[1].id or nil
end

--- ``id``, else the memory under the cursor; several on the line: the user picks one (it
--- took the first: `:EngramFlag` on a line of two memories flagged one the user had not read).
local FLAG_KINDS = { incorrect = true, outdated = true, wrong_scope = true, not_useful = true }

local function with_memory(id, what, run)
  if id and id ~= '' then
    return run(id)
  end
  local found = M.memories_at_cursor()
  if #found == 0 then
    notify('no memory id given and no Engram diagnostic under the cursor', vim.log.levels.WARN)
  elseif #found == 1 then
    run(found[1].id)
  else
    vim.ui.select(found, {
      prompt = 'Engram: ' .. what .. ' which memory?',
      format_item = function(m)
        return m.id .. '  ' .. (vim.split(m.message, '\n')[1] or '')
      end,
    }, function(choice)
      if choice then
        run(choice.id)
      end
    end)
  end
end

function M.flag(id, kind, note)
  kind = (kind and kind ~= '') and kind or 'incorrect'
  note = (note and note ~= '') and note or nil
  with_memory(id, 'flag as ' .. kind, function(chosen)
    M.execute('engram.flag', { id = chosen, kind = kind, note = note }, function()
      notify('flagged ' .. chosen .. ' as ' .. kind)
    end)
  end)
end

function M.confirm(id)
  with_memory(id, 'confirm', function(chosen)
    M.execute('engram.confirm', { id = chosen }, function()
      notify('confirmed ' .. chosen)
    end)
  end)
end

--- Write the memories you stand behind (or the given ids) to the team folder.
function M.share(ids, commit)
  local args = { commit = commit or false }
  if ids and #ids > 0 then
    args.ids = ids
  end
  M.execute('engram.share', args, function(r)
    r = type(r) == 'table' and r or {}
    local written = #(get(r.written) or {})
    local folder = get(r.folder) or '.engram-team'
    local committed = get(r.committed)
    if written == 0 then
      notify('nothing new to share (confirm a memory first, or name its id)')
    else
      notify(('shared %d %s in %s/%s'):format(
        written,
        written == 1 and 'memory' or 'memories',
        folder,
        type(committed) == 'string' and (' (committed ' .. committed:sub(1, 10) .. ')') or ': commit and push it'
      ))
    end
    for _, why in ipairs(get(r.refused) or {}) do
      notify('not shared ' .. tostring(why), vim.log.levels.WARN)
    end
  end)
end

--- Read the team folder (after a pull) into the store.
function M.sync_team()
  M.execute('engram.syncTeam', {}, function(r)
    r = type(r) == 'table' and r or {}
    notify(('team memories: %d added, %d updated, %d retired'):format(
      get(r.added) or 0, get(r.updated) or 0, get(r.retired) or 0
    ))
  end)
end

--- Write the HTML report (docs/report.md) and open it in the browser (vim.ui.open).
function M.report(module)
  local args = vim.empty_dict()
  if module and module ~= '' then
    args.module = module
  end
  M.execute('engram.report', args, function(r)
    notify('report: ' .. r.path)
    if vim.ui.open then
      vim.ui.open(r.path)
    end
  end)
end

local function create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd('EngramSearch', function(o)
    if o.args ~= '' then
      M.search(o.args)
      return
    end
    -- no query: ask for one (Vim's bare "E471: Argument required" said nothing of what)
    vim.ui.input({ prompt = 'Search Engram memories: ' }, function(query)
      if query and vim.trim(query) ~= '' then
        M.search(vim.trim(query))
      end
    end)
  end, { nargs = '*', desc = 'Search Engram memories (quickfix)' })
  cmd('EngramRemember', function(o)
    local mtype, text = o.fargs[1], table.concat(vim.list_slice(o.fargs, 2), ' ')
    M.remember(o.line1, o.line2, mtype, text)
  end, { range = true, nargs = '*', desc = 'Remember the selected lines: [type] [text]' })
  cmd('EngramImpact', function()
    M.impact()
  end, { desc = 'What a change to this file touches' })
  cmd('EngramReview', function()
    M.review()
  end, { desc = 'Memories that need review (quickfix)' })
  cmd('EngramContext', function(o)
    M.context(o.args)
  end, { nargs = '*', desc = 'Token-budgeted context for this file or a query' })
  cmd('EngramFlag', function(o)
    local args = o.fargs
    if FLAG_KINDS[args[1]] then -- `:EngramFlag outdated`: the memory under the cursor
      args = { '', (unpack or table.unpack)(args) }
    end
    M.flag(args[1], args[2], table.concat(vim.list_slice(args, 3), ' '))
  end, {
    nargs = '*',
    desc = 'Flag a memory: [id] [incorrect|outdated|wrong_scope|not_useful] [note]',
  })
  cmd('EngramConfirm', function(o)
    M.confirm(o.fargs[1])
  end, { nargs = '?', desc = 'Confirm a memory (id or the one under the cursor)' })
  cmd('EngramShare', function(o)
    M.share(o.fargs, o.bang)
  end, { nargs = '*', bang = true, desc = 'Share memories with the team (! also commits)' })
  cmd('EngramSync', function()
    M.sync_team()
  end, { desc = 'Read the team folder into the store' })
  cmd('EngramReport', function(o)
    M.report(o.args)
  end, { nargs = '?', complete = 'file', desc = 'Open the HTML report [module file]' })
  cmd('EngramSetup', function()
    M.set_up()
  end, { desc = "Set Engram up in this file's repository (makes its .engram/)" })
end

--- The workspace of a buffer: the nearest directory with a root marker (.git, .engram), or nil.
local function workspace_root(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local found = vim.fs.find(M.config.root_markers, { upward = true, path = vim.fs.dirname(name) })[1]
  return found and vim.fs.dirname(found) or nil
end
M.workspace_root = workspace_root

--- Whether someone set Engram up in `root`: its .engram/ or a team's .engram-team/ is there.
--- The one rule of every editor (docs/lsp.md "Which folders are served"): a workspace
--- without either gets no server and nothing written until :EngramSetup or `engram index`.
local function is_set_up(root)
  local uv = vim.uv or vim.loop
  return uv.fs_stat(root .. '/.engram') ~= nil or uv.fs_stat(root .. '/.engram-team') ~= nil
end
M.is_set_up = is_set_up

--- The root a buffer's server is for: its workspace, when it is set up.
local function served_root(bufnr)
  local root = workspace_root(bufnr)
  if root and is_set_up(root) then
    return root
  end
  return nil
end

local function lsp_config()
  return {
    name = 'engram',
    cmd = M.server_cmd(),
    -- a file in no workspace starts no server: with `root_markers` Neovim started it with no
    -- root, the server took Neovim's working directory for the workspace, and `nvim
    -- ~/notes.py` from $HOME made ~/.engram (an engine, logs, caches) nobody asked for.
    -- Nor does a git repository nobody set Engram up in: the server made .engram/ in every
    -- repository a file was opened from, and started a workspace engine (~250 MB) for it.
    root_dir = function(bufnr, on_dir)
      local root = served_root(bufnr)
      if root then
        on_dir(root)
      end
    end,
    filetypes = M.config.filetypes,
    init_options = M.config.settings,
    settings = { engram = M.config.settings },
  }
end

--- :EngramSetup: set Engram up in the current buffer's workspace (a repository nobody set
--- up). The server makes its .engram/ (with the .gitignore that keeps it out of commits),
--- serves it and runs its first index with progress (`engram.setUp`).
function M.set_up(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  -- from the quickfix list or a help window it said "in no workspace": say what to do
  if not file_of(bufnr, ':EngramSetup') then
    return
  end
  local root = workspace_root(bufnr)
  if not root then
    notify('this buffer is in no workspace (no .git or .engram above it)', vim.log.levels.WARN)
    return
  end
  local running = engram_client(bufnr)
  if is_set_up(root) and running and running.config.root_dir == root then
    notify('already set up in ' .. root)
    return
  end
  local conf = lsp_config()
  conf.root_dir = root
  conf.on_init = function(client)
    M.execute_on(client, 'engram.setUp', { workspaceFolder = root }, function(result)
      local problem = type(result) == 'table' and get(result.error) or nil
      if problem then
        notify(problem, vim.log.levels.ERROR)
        return
      end
      -- the repository's other open buffers join the server now that it is set up
      for _, buf in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(buf) and workspace_root(buf) == root then
          vim.lsp.buf_attach_client(buf, client.id)
        end
      end
      notify('set up in ' .. root .. ': its memory is in .engram/ (indexing in the background)')
    end)
  end
  vim.lsp.start(conf, { bufnr = bufnr })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  create_commands()
  local conf = lsp_config()
  if has_new_lsp_config() then
    vim.lsp.config('engram', conf)
    vim.lsp.enable('engram')
  else
    -- Neovim 0.8–0.10: start (or reuse) the client for every normal file buffer.
    vim.api.nvim_create_autocmd('FileType', {
      group = vim.api.nvim_create_augroup('engram_lsp', { clear = true }),
      callback = function(args)
        if vim.bo[args.buf].buftype ~= '' then
          return
        end
        if conf.filetypes and not vim.tbl_contains(conf.filetypes, vim.bo[args.buf].filetype) then
          return
        end
        local root = served_root(args.buf)
        if not root then
          return -- no workspace, or one nobody set up: no server (see lsp_config)
        end
        vim.lsp.start({
          name = 'engram',
          cmd = conf.cmd,
          root_dir = root,
          init_options = conf.init_options,
          settings = conf.settings,
        }, { bufnr = args.buf })
      end,
    })
  end
end

return M
