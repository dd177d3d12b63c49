package repl

import "strings"

// command is one entry of the command table: its names (the first is the
// command, the rest aliases), its group in `help`, a usage line, help text
// (the first line is the summary), a completer for its arguments, and the
// func that runs it.
type command struct {
	aliases  []string
	group    string
	usage    string
	help     string
	complete func(t *Term, args []string, word string) []string
	fn       func(t *Term, args string) error
	noRepeat bool // an empty line does not repeat it
	// noArgsHint, for a command whose usage is its bare name (it takes no
	// arguments: the dispatcher refuses any), is added to that refusal.
	noArgsHint string
}

func (c *command) name() string { return c.aliases[0] }

func (c *command) summary() string {
	s, _, _ := strings.Cut(c.help, "\n")
	return s
}

// noCount is the refusal hint of the commands that resume a pass: gdb
// takes a repeat count there (`next 3`, `continue 2`), hsdb does not.
const noCount = "gdb's repeat count is not taken: `until SITE` or `break SITE` stops further on"

// groups orders the groups of `help` and of the README reference.
var groups = []string{"running", "breakpoints", "data", "interventions", "captures", "model", "session"}

// commands is the one command table; `help`, completion and the README
// reference are generated from it.
var commands []*command

func init() {
	commands = []*command{
		// running
		{aliases: []string{"input"}, group: "running", noRepeat: true,
			usage: `input ids 1,2,3 [; ids 4,5] | input text "..." [; text "..."] | input file F.jsonl | input`,
			help: "Set the token batch of the next run.\n" +
				"Sequences are separated by ';' (outside quotes) and flattened into one batch as vLLM does ([tokens] with seq_lens). " +
				"`ids` are separated by commas or spaces, in brackets or not, as `input` and `gen` print them ([1, 403, 407]). " +
				"`text` encodes with the model's tokenizer and prepends BOS as its reference does (llama2.c, SentencePiece; a bare tokenizer.model with a tokenizer_config.json as transformers 5.17's AutoTokenizer does: add_bos_token, none by default; HF tokenizer.json as transformers does: its post_processor, or add_bos_token where tokenizer_config.json names it; none for Kimi's tiktoken.model, to which HF's tokenizer adds no [BOS]) and appends EOS where the reference does (add_eos_token, or a post_processor template ending in a special token; `info model` shows both); a \"quoted\" text takes Go/JSON escapes (\\n \\t \\\\ \\\" \\uXXXX), a 'single-quoted' one none. " +
				"`file` reads JSON lines (a regular file of at most 256 MiB: the batch is one forward pass), each {\"text\": ...} or {\"input_ids\": [...]}; a row's loss_mask is not kept (the batch is token ids: `dump` writes none, and says so at `input`; `hsdb capture --data` keeps an input_ids row's and refuses one on a text row). " +
				"Without arguments, shows the batch, every sequence (setting a batch of more than 4 shows the first 4, and a sequence of over 24 ids as its first 16 and last 8, as `info batch` does).",
			complete: completeInput, fn: cmdInput},
		{aliases: []string{"run", "r"}, group: "running", noRepeat: true, usage: "run", noArgsHint: "set the batch with input",
			help: "Start a forward pass (prefill) over the batch.\n" +
				"A pass already stopped is aborted and started again. It runs to the first breakpoint, watch or Ctrl-C, or to the end, " +
				"where it prints each sequence's greedy next token.",
			fn: cmdRun},
		{aliases: []string{"continue", "c"}, group: "running", usage: "continue", noArgsHint: noCount,
			help: "Resume the stopped pass until the next breakpoint, watch or the end.", fn: cmdContinue},
		{aliases: []string{"step", "s"}, group: "running", usage: "step", noArgsHint: noCount,
			help: "Resume until the next site, entering sub-modules.\nSites are visited when their module returns, in the order of `info sites`.", fn: cmdStep},
		{aliases: []string{"next", "n"}, group: "running", usage: "next", noArgsHint: noCount,
			help: "Resume until the next site at the same depth or shallower.\nSub-modules of the next module are stepped over; at the last child, stops at the parent's site.", fn: cmdNext},
		{aliases: []string{"finish"}, group: "running", usage: "finish", noArgsHint: noCount,
			help: "Resume until the enclosing module returns (its site).", fn: cmdFinish},
		{aliases: []string{"until", "u"}, group: "running", usage: "until SITE",
			help: "Resume until a site matching SITE (breakpoints still stop).\nA site the step has passed comes again only in the next step (`gen`); a pass that ends first says so, as step, next and finish do.", complete: completeSites, fn: cmdUntil},
		{aliases: []string{"kill", "k"}, group: "running", usage: "kill", noRepeat: true,
			help: "Abort the stopped forward pass (as gdb's kill).\nNothing after the stop runs and the pass prints no result; breakpoints, displays and the batch stay, and what the pass captured before the stop is kept (`dump` then names the layers it never reached). `run` starts a fresh pass; after a kill in a decode step, `gen` runs that step again and its captures replace the aborted attempt's rows.", fn: cmdKill},
		{aliases: []string{"gen"}, group: "running", usage: "gen N",
			help: "Run N decode steps, stopping at breakpoints inside each.\n" +
				"Each sequence is fed its greedy (argmax) token. Stopped in a step, the step is finished first and the stopped pass's batch decoded on; otherwise decoding continues the last completed run.\n" +
				"gen never starts a pass: after `input` changes the batch, gen is refused until `run` prefills the new one (then gen N decodes it), as continue never restarts a program in gdb; so after `check` or `diff` with the model, whose forward passes of their own replace the run's sequences.",
			fn: cmdGen},

		// breakpoints
		{aliases: []string{"break", "b"}, group: "breakpoints", usage: "break SITE [if COND]", noRepeat: true,
			help: "Stop at every site matching SITE, when COND holds on some rank.\n" +
				"SITE is a module path without `model.`, with `*` for any one component and a-b for a range: layers.3, layers.*.mlp, layers.2-5, lm_head. " +
				"COND is an expression over statistics of the site's tensors on a rank: absmax(residual) > 1e4, std(hidden_states) == 0, nan, inf, rank == 3; " +
				"statistics: mean std min max absmax l2 nan inf zeros count; names: rank step layer tokens; operators: == != < <= > >= && || ! + - * / ( ). " +
				"A condition that can hold on no rank of the world (rank == 3 at world size 2) is refused.",
			complete: completeBreak, fn: cmdBreak},
		{aliases: []string{"tbreak"}, group: "breakpoints", usage: "tbreak SITE [if COND]", noRepeat: true,
			help: "Like break, but deleted after it stops once.", complete: completeBreak, fn: cmdTbreak},
		{aliases: []string{"watch"}, group: "breakpoints", usage: "watch TENSOR COND", noRepeat: true,
			help: "Stop at the first site where COND on TENSOR becomes true.\n" +
				"Statistics written alone apply to TENSOR: watch stream absmax > 500. It fires again only after COND was false at a site showing TENSOR; each step starts afresh.",
			complete: completeTensors, fn: cmdWatch},
		{aliases: []string{"delete", "d"}, group: "breakpoints", usage: "delete [N...] | delete edits [N...]", noRepeat: true,
			help: "Delete breakpoints and watches N, or all of them; it says which it deleted and lists those left.\n`delete edits` forgets edits N (or all): values already written stay written; persistent ones are no longer applied.", complete: words("edits"), fn: cmdDelete},
		{aliases: []string{"enable"}, group: "breakpoints", usage: "enable [N...]", noRepeat: true,
			help: "Enable breakpoints N, or all.", fn: func(t *Term, a string) error { return cmdEnable(t, a, true) }},
		{aliases: []string{"disable"}, group: "breakpoints", usage: "disable [N...]", noRepeat: true,
			help: "Disable breakpoints N, or all.", fn: func(t *Term, a string) error { return cmdEnable(t, a, false) }},
		{aliases: []string{"ignore"}, group: "breakpoints", usage: "ignore N COUNT", noRepeat: true,
			help: "Pass breakpoint or watch N the next COUNT times it would stop (as gdb's ignore).\nThe crossings passed still count as hits, and info break shows how many are left.", fn: cmdIgnore},
		{aliases: []string{"condition"}, group: "breakpoints", usage: "condition N [COND]", noRepeat: true,
			help: "Make COND the condition of breakpoint or watch N (as gdb's condition).\nIt is checked as `break ... if COND` checks it; without COND, breakpoint N stops unconditionally. Lists the breakpoints.", fn: cmdCondition},

		// data
		{aliases: []string{"print", "p"}, group: "data", usage: "print TENSOR[ROWS, COLS] [--rank R] [--seq S] [--tokens A:B]",
			help: "Statistics of a tensor at the stop, one row per rank, or its values.\n" +
				"Columns: shape, dtype, sharding, then the statistics of `set stats` (std is the population std, ddof=0 like torch.std(unbiased=False); " +
				"mean, std, min, max, absmax and l2 are over finite elements and show — when there is none), " +
				"and for replicated tensors on more than one rank max |Δ| against rank 0 (the column is left out at tp 1 and for sharded or partial tensors). Sharded tensors get a `gathered` row, partial sums a `sum` row. " +
				"An integer tensor (a router's topk_ids) shows count, min, max and distinct ids instead, and for topk_ids how many lie outside [0, E) (E the router's expert count). " +
				"A MoE gate's topk_weights [tokens, top_k] (f32, at layers.N.mlp.gate and the MoE block) are the weights the routed experts' outputs are summed with, as HF's DeepseekV3MoE.route_tokens_to_experts returns them (transformers models/deepseek_v3/modeling_deepseek_v3.py): the chosen experts' scores (sigmoid, or softmax for DeepSeek-V2; without e_score_correction_bias), renormalised to sum 1 when norm_topk_prob, then multiplied by routed_scaling_factor (2.5 in DeepSeek-V3's config.json, so a token's weights sum to 2.5, not 1); a router that applies the factor to the experts' output instead has weights routed_scaling_factor times smaller. " +
				"--seq S selects one sequence of the batch, --tokens A:B its tokens (or the batch's). " +
				"With an index, prints values: print hidden_states[3, :8] (rows after --seq/--tokens; columns of each rank's tensor, each shard's line naming the full tensor's columns they are, and of the full tensor in the gathered row; consecutive ranks with the same values to the bit, as a replicated tensor's copies until one diverges, are printed once as ranks 0-3).",
			complete: completeTensors, fn: cmdPrint},
		{aliases: []string{"attn_probs"}, group: "data", usage: "print attn_probs --head H [--seq S]",
			help: "Attention probabilities of query head H for sequence S at an attention site (layers.N.self_attn.attn; Llama also at its rotary_emb; DeepSeek also at self_attn).\n" +
				"Recomputed at the stop from the site's q and k on the rank that holds head H (H counts the model's heads; the rank is shown): softmax(q·kᵀ·scale) in float64 over the causal keys of the same sequence " +
				"(Mistral: the sliding window's), query head h reading kv head h / (heads/kv_heads) as HF's repeat_kv; for MLA q and k are the per-head [nope | rope] vectors and the scale includes YaRN's mscale². " +
				"Rows are queries, columns keys, with each row's sum; text shows the first 32 tokens, --json all of them (HF's output_attentions[layer][0, H]). " +
				"The keys are the step's own, so only a sequence that starts in this step (the prefill) is shown. " +
				"`hist attn_probs --head H --seq S` and `top attn_probs K --head H --seq S` look at the attended entries (top: key positions as channels, query tokens as rows). Also reachable as `attn_probs ...`.",
			fn: func(t *Term, a string) error { return t.printAttn(a) }},
		{aliases: []string{"hist"}, group: "data", usage: "hist TENSOR [--rank R] [--seq S] [--tokens A:B]",
			help: "Terminal histogram of a tensor's finite values.\nDefault source: rank 0 for replicated tensors, the gathered tensor for sharded or partial ones. " +
				"Bins are [lo, hi), the last [lo, hi]; a tensor of one value is the single bin [v, v]. NaN and Inf are counted below the bars. " +
				"An integer tensor (a router's topk_ids) gets min, max, distinct ids (and for topk_ids those outside [0, E)) and a bar per id with its count (past 64 distinct ids a bar per range [a, b] of whole ids, never fractional edges: [0, E) split from id 0, the ids outside it in ranges of their own). " +
				"With json on (or hsdb --json) a float tensor's result holds stats and hist (lo, hi, the bins' counts, nan, inf); an integer tensor's holds integers only: ids (the exact count of every id, min, max, distinct, out_of_range) and bars, the bars drawn, each [lo, hi] of whole ids (lo = hi: one id; ranged: ranges) with its count, and no float statistics or bins.",
			complete: completeTensors, fn: cmdHist},
		{aliases: []string{"top"}, group: "data", usage: "top TENSOR [K] [--rank R] [--seq S] [--tokens A:B]",
			help: "The K (10) channels with the largest |value| (massive activations).\nEach with its value, its ratio to the median |value| (— when the median is 0), " +
				"and the batch token where it occurs (sequence, position). Where the tensor's rows are not the batch's tokens one to one " +
				"(lm_head's logits: one row per sequence's last token) a row column gives the tensor's row. For lm_head's logits each channel's token text is shown. A router's topk_ids (expert ids per top-k slot) is refused: `hist topk_ids` counts each expert's picks; an expert load's channels are experts (`top tokens_per_expert`: the busiest).",
			complete: completeTensors, fn: cmdTop},
		{aliases: []string{"ranks"}, group: "data", usage: "ranks TENSOR [--seq S] [--tokens A:B]",
			help:     "Compare a tensor between every pair of ranks.\nRelations: equal, diverged (with the first differing [row, col] and max |Δ|), shard of (different columns of one tensor), addends (partial sums).",
			complete: completeTensors, fn: cmdRanks},
		{aliases: []string{"display"}, group: "data", usage: "display [TENSOR [flags]]",
			help: "Print TENSOR (as print does) at every stop; without arguments, list the displays.\n" +
				"The tensor name (some site must show it) and --rank are checked when the display is set; a stop whose site does not show the tensor skips it.",
			complete: completeTensors, fn: cmdDisplay},
		{aliases: []string{"undisplay"}, group: "data", usage: "undisplay [N...]",
			help: "Remove displays N, or all; it says which it removed and lists those left, as delete does.", fn: cmdUndisplay},
		{aliases: []string{"bt", "where", "backtrace"}, group: "data", usage: "bt [N|-N] [full]",
			help: "The call chain at the stop, innermost first, numbered as gdb does: #0 the stopped site, #1 the module enclosing it, and so on outward to the root model.\nEach frame: vLLM class, site, and input shapes per rank; #0 also its output tensors. N shows the innermost N frames, -N the outermost N (as gdb's bt N); full is accepted and changes nothing (the frames show their tensors already).", fn: cmdBacktrace},
		{aliases: []string{"frame", "f"}, group: "data", usage: "frame [N]",
			help: "Look at frame #N of `bt`: #0 the stopped site, N ≥ 1 the module N levels out from it.\n" +
				"The tensors of an enclosing module are its inputs (its outputs do not exist yet): input, and input_residual for a decoder layer's second input (vLLM's residual). " +
				"print, hist, top, ranks, save, compare and set var then look at them (inputs are read already: set var refuses them). Without N, shows the frame looked at; every stop goes back to the stopped site.",
			fn: func(t *Term, a string) error { return cmdFrame(t, a, 0) }},
		{aliases: []string{"up"}, group: "data", usage: "up [N]",
			help: "Look at the module N (1) levels further out: frame #(current + N) (see frame).\n" +
				"At the outermost frame with a site (below the root model object, which has none) up is refused, as gdb's \"Initial frame selected; you cannot go up.\"; so is an N past it, saying how far up goes.", fn: func(t *Term, a string) error { return cmdFrame(t, a, 1) }},
		{aliases: []string{"down"}, group: "data", usage: "down [N]",
			help: "Look at the module N (1) levels further in, towards the stopped site #0: frame #(current - N) (see frame).\n" +
				"At #0, the stopped site, down is refused, as gdb's \"Bottom (innermost) frame selected; you cannot go down.\"; so is an N past it, saying how far down goes.", fn: func(t *Term, a string) error { return cmdFrame(t, a, -1) }},
		{aliases: []string{"trace"}, group: "data", usage: "trace on|off",
			help:     "Print every site the pass visits, with its tensors' shapes on rank 0.",
			complete: words("on", "off"), fn: cmdTrace},

		// interventions
		{aliases: []string{"save"}, group: "interventions", usage: "save TENSOR FILE.safetensors|FILE.npy [--rank R] [--seq S] [--tokens A:B] [--force]", noRepeat: true,
			help: "Write a tensor at the stop to a file, as f32 [rows, cols].\n" +
				"The full tensor (sharded: gathered; partial: summed; replicated: rank 0's copy), or --rank R's own; rows as print selects them. " +
				".safetensors holds it under SITE:TENSOR with the site, step, source, rows and the pass's edits as metadata; .npy is NumPy's format 1.0 ('<f4'). " +
				"Written under a temporary name, read back and compared, then renamed into place. An existing FILE is replaced only with --force, and --force replaces only a .safetensors file save wrote (one SITE:TENSOR with its metadata): never another file, and never a .npy file (it carries no mark of its writer).",
			complete: completeTensors, fn: cmdSave},
		{aliases: []string{"compare"}, group: "interventions", usage: "compare DUMP", noRepeat: true,
			help: "Compare the stop's tensors with a dump of the same inputs (live diff).\n" +
				"Every tensor of the stopped site the dump holds (a layer capture of the same half, or a site capture), per sequence, rows by position: cosine, max |Δ|, " +
				"the reference's max |value| and the first token whose row departs (cosine below, or max |Δ| above, the tolerance `diff` uses for the dump's dtype; a router's topk_ids, held as integers, departs where any id differs); " +
				"input_ids that differ from the dump's are counted. The stop's side is the full tensor (gathered when sharded, summed when partial); " +
				"a replicated tensor whose ranks' copies differ in a sequence (set var --rank, a diverged rank) gets a row per rank for it, in a rank column.",
			complete: completeFiles, fn: cmdCompare},
		{aliases: []string{"patch"}, group: "interventions", usage: "patch TENSOR from DUMP [--seq S] | patch SITE.TENSOR from DUMP", noRepeat: true,
			help: "Replace a tensor with the one captured in another run (activation patching), and continue with it.\n" +
				"At a stop, TENSOR of the stopped site; with SITE.TENSOR, armed for the next run (`info edits` shows it armed). DUMP is an hsdb dump holding that tensor: " +
				"a layer capture (`capture layers` with the same --what) or a site capture (`capture site`). Each sequence of the batch (or only --seq S) takes the dump's sequence of the same number, " +
				"row by position; the lengths and widths must agree (the ids may differ: clean vs corrupted prompt — the edit says how many do). Sharded tensors: each rank takes its columns. " +
				"Patching stream writes hidden_states and zeros residual (see `set var`). Only the batch's sequences are read; an armed patch reads them when the run reaches the site. Reset by `run` as edits are.",
			complete: completeFiles, fn: cmdPatch},
		{aliases: []string{"lens"}, group: "interventions", usage: "lens [K]",
			help: "The logit lens: the final norm and lm_head applied to the stopped layer's stream (or the embeddings at model.embed_tokens).\n" +
				"For each sequence's last token of the step, the K (5) tokens of largest logit, decoded, with their softmax probability over the whole vocabulary (NaN logits rank first, as torch.topk ranks them, and a note counts them). " +
				"Every rank computes its vocabulary shard from its own copy of the stream (a note says when the copies differ, after `set var --rank`); at the last layer it equals the model's own logits.",
			fn: cmdLens},

		// captures
		{aliases: []string{"capture"}, group: "captures", noRepeat: true,
			usage: "capture layers 2,30,58,60|eagle3 [--what stream|hidden_states|residual] | capture site SITE TENSOR | capture list | capture clear",
			help: "Record tensors during every run and gen, for `dump`.\n" +
				"`layers` records each decoder layer's output site (eagle3: hsdb layers 1, N/2-1, N-4, N-1, as hsdb capture --layers eagle3, which `dump --format speculators` writes as its EAGLE-3 ids 2, N/2, N-3, N; SpecForge's are the first three, and `dump --format specforge` takes exactly three captured layers and the final norm's output: `capture layers 1,N/2-1,N-4` and `capture site model.norm hidden_states` for it): stream (default) = hidden_states + residual = HF output_hidden_states[i+1] " +
				"(HF's last entry is post final norm), or vLLM's un-summed hidden_states or residual half. `site` records any per-token tensor of a site (a MoE router's choices: `capture site layers.N.mlp.gate topk_ids` and `topk_weights`, the latter with routed_scaling_factor applied as HF's router does (`help print`), which check and diff compare with the model's). " +
				"Per-token tensors are split per sequence of the flattened batch, gathered across ranks when sharded (summed when partial) " +
				"and checked across ranks when replicated; decode steps append rows, and each `run` starts the recording over (a dump holds the last run and its gen steps). `list` shows what is captured, `clear` forgets it all.",
			complete: completeCapture, fn: cmdCapture},
		{aliases: []string{"dump"}, group: "captures", usage: "dump DIR [--force] [--dtype f32|bf16|f16] [--format hsdb|speculators|specforge] [--compress]", noRepeat: true,
			help: "Write the captures as a validated dump: DIR/manifest.json and one safetensors file per sequence (DIR's missing parent directories are made).\n" +
				"Each file holds input_ids [len] (i64) and hidden_states.{layer} [len, hidden] (site captures as SITE:TENSOR) in the model's dtype or --dtype (f32, bf16 or f16; PyTorch's names float32, bfloat16, float16, torch.bfloat16, ... too, as `hsdb capture --save-dtype` takes them). " +
				"Written in a temporary directory, each file re-read and checked (shapes, sha256 of every tensor, values equal to what was captured, all finite, layers distinct), then renamed into place. " +
				"An existing DIR is never replaced without --force, and --force replaces only a dump hsdb wrote (its manifest lists every file in it): never an ordinary file, a directory holding other files, the home or working directory. " +
				"One job at a time writes DIR (an advisory lock beside it, .DIR.lock, released on exit however the process ends); a failure leaves nothing behind, and the staging directories of killed dumps (.DIR.tmp-PID-*) are removed by the next dump of DIR. " +
				"--format speculators writes hs_{idx}.safetensors instead (hidden_states [len, n_ids, hidden] + token_ids, as speculators trains on them: ids are the captured layers + 1, with 0 first when `capture site model.embed_tokens hidden_states` is on); " +
				"--format specforge writes rows_{g}-{g+2000}/data_{idx}.ckpt torch.save archives (aux_hidden_state = the captured layers concatenated, hidden_state = `capture site model.norm hidden_states`; --compress: .ckpt.gz). " +
				"Both bf16 unless --dtype, with manifest.json beside them as hsdb's sidecar (the trainers ignore it); SpecForge reads exactly three aux layers, so --format specforge of another count is refused before anything is written; a speculators file whose aux ids are not the three EAGLE-3's draft reads is noted, and so are the captures the format has no place for (other site captures, such as a router's topk_ids: `not_written` in json), which only hsdb's own dump writes.",
			complete: completeFiles, fn: cmdDump},
		{aliases: []string{"inject"}, group: "captures", noRepeat: true,
			usage: "inject FAULT [VALUE] [at SITE] [--rank R] [--token T --channel C] | inject clear | inject",
			help:  injectHelp(), complete: completeFaults, fn: cmdInject},
		{aliases: []string{"check"}, group: "captures", usage: "check PATH [--layers 2,30] [--tp N] [--seq-lens 512,259] [--no-model]", noRepeat: true,
			help: "Validate a capture file or directory: hsdb dumps, safetensors, torch .pt (no pickled code runs).\n" +
				"Prints the structure, every validation rule as pass/FAIL/skip, shape forensics in the model's terms (which config size a wrong width equals, " +
				"whether a count is a flattened batch; said to rest on shapes alone with --no-model), value conditions (all zeros, constant rows, NaN/Inf, saturation, a misaligned loss_mask) and, " +
				"unless --no-model, what each tensor really is by running this model on the file's input_ids: every explanation scored on values " +
				"(layers × hidden_states/residual/stream/normed stream × full/rank shard, site tensors of a fitting width, row shifts, sequence order, BOS, labels, chunk restarts, a fitted scale named by a config constant), " +
				"the best and the runner-up with their scores; captured router top-k compared with the model's. The same verdict as diff. A verdict other than valid fails the command after the report (as `hsdb check` exits 1): a script (`hsdb -x`, `source`) stops there with exit 1, as gdb's scripts stop on a failing command (`set errors continue` goes on); so does diff's. It runs forward passes of its own, so not while a pass is stopped (continue to the end first); --no-model runs none.\n" +
				"Hostile files are refused with the bound they hit, before the work: a dump manifest's files must be plain names inside the dump, and each of its tensors entries hsdb's own (a safetensors dtype, a 64-digit sha256 and a shape of at most 8 dims: what the entries hold in memory stays under about twice their bytes) and its fields other than sequences at most 4 MiB and 65536 replica records; a torch .pt's data.pkl at most 64 MiB " +
				"(from the zip entry's declared size, before inflating), its records at most the file's size + 256 MiB in all, the pickle's values at most 2^20 once shared references are expanded, " +
				"nested at most 64 deep, numbers at most 4096 bits, views at most 4 × their storages + 1 MiB, unpickling at most 10 s; only the globals torch.save needs are allowed.",
			complete: completeFiles, fn: cmdCheck},
		{aliases: []string{"diff"}, group: "captures", usage: "diff PATH [--layers 2,30] [--tp N] [--seq-lens 512,259]", noRepeat: true,
			help: "Compare a capture with this model's forward pass on its input_ids, layer by layer.\n" +
				"Per entry: the cosine and max |Δ| against the layer it claims and its best explanation on values; then the first layer (and token) where it departs beyond tolerance, " +
				"and check's verdict on the same file (one engine: diff fails exactly when check does). It runs forward passes of its own, so not while a pass is stopped (continue to the end first).",
			complete: completeFiles, fn: cmdDiff},

		// model
		{aliases: []string{"info", "i"}, group: "model", usage: "info model [--fp8|--quantized|--unused]|layers|ranks|memory|sites|break|display|frame|stack|batch|edits|inject|captures",
			help: "Facts about the model and the session.\nmodel: architecture, sizes (MLA's, and a MoE model's routed experts: count, top-k, sizes, the layers that route), loaded layers, dtypes (config, weights as stored and as kept, fp8 dequantized, activations), " +
				"unused checkpoint tensors, parameters, world size (and --ep, experts whole per rank), the tokenizer `input text` encodes with, the BOS it puts before a text (none for Kimi's tiktoken.model) and the EOS it puts after one (HF's add_eos_token or a post_processor template ending in a special token; none for llama2.c or Kimi); --fp8 lists the tensors stored as fp8 (block scales), --quantized every quantized weight with its format (fp8 block, int4 group) (both a line per name with its routed experts' and decoder layers' numbers as runs, model.layers.{1-60}.mlp.experts.{0-383}.up_proj.weight (23040 weights); json lists each), --unused the checkpoint tensors the model does not use; layers: decoder layers; " +
				"ranks: device and weight shards per rank (embeddings and lm_head as real rows of the vocabulary with vLLM's padded range, each run of decoder layers split alike once, which routed experts each rank holds) and, with rank workers, each rank's worker process: pid, host and state " +
				"(idle, running, at a stop, stopped by a signal, or FAILED with its fault report), read without waiting on any worker; " +
				"memory: per rank, the bytes in use on its device (weights, KV cache and what else the backend holds) and of them the KV cache, and the device (a rank over --pp stages: each stage's device, the bytes summed over them; `hsdb plan --pp` gives each stage); sites: every site in visit order with its tensors; break: breakpoints and watches (also breakpoints, b); watchpoints: the watches only, as gdb's (also watch); display: displays; frame: the frame looked at (as `frame`); stack: the backtrace (as `bt`); " +
				"batch: the sequences of the stopped step, one a line (a stop line lists at most 4): token count, position in a decode step, the token ids (a sequence over 24 ids as its first 16 and last 8, saying how many were left out; json lists all) and their text where a tokenizer is loaded; or the batch input set. " +
				"edits: the edits (`set var`, `patch`) of the current pass, then persistent and armed ones, with how often each was applied. inject: the injected faults. captures: what `capture` records and what it has recorded (as `capture list`).",
			complete: words("model", "layers", "ranks", "memory", "sites", "break", "display", "frame", "stack", "batch", "edits", "inject", "captures"), fn: cmdInfo},
		{aliases: []string{"tree"}, group: "model", usage: "tree [SITE]",
			help: "The module tree (vLLM classes) with parameter counts and each weight's per-rank shard shape.\n" +
				"The routed experts' weights of one shape and split are one line ({0-383}.gate_proj.weight (384 weights)); at --ep each expert is whole on one rank. json lists every weight.", complete: completeSites, fn: cmdTree},

		// session
		{aliases: []string{"set"}, group: "session", usage: "set OPTION VALUE | set var TENSOR[ROWS, COLS] = VALUE [--rank R] [--seq S] [--tokens A:B] [--persist]", noRepeat: true,
			help: "Set an option (`show` lists them): colour, precision, stats, errors, echo, bins, width, json; or edit a tensor at the stop (`set var`).\n" +
				"`set var` writes into the live tensor and the pass continues with it: VALUE is a number, nan, inf or -inf, or an operator and number applied to the tensor itself " +
				"(`* 0.5`, `+ 1`, `- 2`, `/ 4`, also written `stream * 0.5`). Rows as print counts them (after --seq/--tokens); columns of the full tensor (a sharded tensor's ranks each write the columns they hold). " +
				"Every rank's copy, or --rank R's only (a replicated tensor then diverges on R, as `ranks` shows). Only tensors the pass reads after the stop can be edited (outputs; not a module's input). " +
				"At a decoder layer, stream = hidden_states + residual is made for the stop only: editing it writes the edited stream into hidden_states and zeros residual in the edited rows, " +
				"so the pair vLLM passes on sums exactly to the edited stream (hidden_states and residual then no longer hold their own halves); editing hidden_states or residual makes stream again in the edited rows. " +
				"A partial sum takes = and + only with --rank. A capture of the site records the edited tensor (what the pass goes on with). Edits are listed by `info edits`, shown at every later stop and in a dump's manifest (\"edits\"), and reset by `run`; " +
				"--persist applies the edit again at the same site and step of every later run (ablations) until `delete edits`; a run where it no longer fits (another batch) stops with its error.\n" +
				"A value the option does not take is an error and leaves the option as it was. " +
				"With json on (or hsdb --json) each result is one line {\"command\", \"kind\", \"result\"} and each error {\"command\", \"error\"}; " +
				"NaN and ±Inf are written as the strings \"NaN\", \"Inf\" and \"-Inf\", statistics left undefined by a tensor with no finite element as null, and empty lists as [].",
			complete: completeSetOptions, fn: cmdSet},
		{aliases: []string{"show"}, group: "session", usage: "show [OPTION]",
			help: "Show options and their values.", complete: completeOptions, fn: cmdShow},
		{aliases: []string{"source"}, group: "session", usage: "source FILE", noRepeat: true,
			help: "Run the commands of FILE, one per line (# starts a comment; a line may hold 16 MiB).\n" +
				"It stops at the first failing command (`set errors continue`: goes on). A script cannot source itself, directly or through others. " +
				"Ctrl-C stops the script after the command under way; `hsdb -x` then exits with status 130, and with 1 when a command failed, quit or no quit.",
			complete: completeFiles, fn: cmdSource},
		{aliases: []string{"echo"}, group: "session", usage: "echo TEXT",
			help: "Print TEXT.", fn: cmdEcho},
		{aliases: []string{"help", "h"}, group: "session", usage: "help [COMMAND]",
			help: "List the commands, or explain one (words after the command, as in `help set var` or `help info break`, are covered by its help).", complete: completeCommands, fn: cmdHelp},
		{aliases: []string{"quit", "q", "exit"}, group: "session", usage: "quit", noRepeat: true,
			help: "Leave hsdb (Ctrl-D too).", fn: func(*Term, string) error { return ErrQuit }},
	}
	seen := map[string]bool{}
	for _, c := range commands {
		for _, a := range c.aliases {
			if seen[a] {
				panic("repl: command name " + a + " used twice")
			}
			seen[a] = true
		}
	}
}

// lookup returns the command called name (or an alias of it), or nil.
func lookup(name string) *command {
	for _, c := range commands {
		for _, a := range c.aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}
