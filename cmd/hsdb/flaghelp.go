package main

// flagUsageFor holds, per subcommand (its flag set's name: "hsdb" for the
// debugger), the help text of a shared flag (flagTable) where that
// command takes it otherwise than the table's text says: the flag keeps
// its name, type and default everywhere, and each `hsdb CMD --help`
// describes it as CMD uses it (plan loads nothing, check runs without a
// model, diff needs one). registerExcept reads it.
var flagUsageFor = map[string]map[string]string{
	"hsdb": {
		"json": "print each debugger command's result as one JSON object a line ({command, kind, result}; an error: {command, error}), and a failure before the session starts as one object with command, error and exit",
	},
	"generate": {
		"json": "print the generation as one JSON object (ids, prompt_ids, text); a failure: one object with command, error and exit",
	},
	"capture": {
		"layers": "layers captured, in --format's ids (hsdb's decoder layers with the default --format hsdb), e.g. 2,30,58,60; default eagle3: EAGLE-3's layers in the format's ids (hsdb layers 1, N/2-1, N-4, N-1 = speculators ids 2, N/2, N-3, N, of which specforge takes the first three)",
		"json":   "print the job's summary as one JSON object; a failure: the same object with error and exit",
	},
	"check": {
		"model":  "the model the capture came from, to say what each tensor is on values (scale, row alignment, site, shard): an HF directory (config.json + safetensors), a llama2.c .bin or \"embedded\" for the embedded stories260K; empty: no model (structure, rules and value conditions only)",
		"tp":     checkTPUsage,
		"layers": checkLayersUsage,
		"json":   checkJSONUsage,
	},
	"diff": {
		"model":  "the model whose forward pass the capture is compared with (required): an HF directory (config.json + safetensors), a llama2.c .bin or \"embedded\" for the embedded stories260K",
		"tp":     checkTPUsage,
		"layers": checkLayersUsage,
		"json":   checkJSONUsage,
	},
	"plan": {
		"model":       "the model planned, nothing of it loaded: an HF directory (config.json is enough; the safetensors' headers, where present, give the stored dtypes), a llama2.c .bin (its header), \"embedded\" or empty for the embedded stories260K",
		"tp":          "tensor-parallel world size (ranks) planned: each rank's share of the weights, KV cache and activations",
		"dtype":       "plan the weights converted on load to f32, bf16 or f16 (default: as stored); quantized weights (fp8, int4) are planned quantized on cuda and dequantized to it on cpu",
		"ep":          "MoE models: plan whole experts per rank (expert parallel, over the --tp ranks) instead of each expert split",
		"w8a8":        "fp8 checkpoints on cuda: plan the block-scaled fp8 linears run as fp8 GEMMs (hsdb --w8a8): their inputs, quantized to fp8 per token and 128 columns, and cuBLASLt's workspace are counted with the activations",
		"moe":         "MoE expert split planned: tp (each expert's intermediate split over ranks, vLLM's default; the default) or ep (same as --ep)",
		"load-layers": "plan only decoder layers A-B (with embeddings, final norm and head), as --load-layers loads them, e.g. 58-60",
		"json":        "print the plan as one JSON object (--pp: one for all stages); a failure: one object with command, error and exit",
	},
}

// checkTPUsage, checkLayersUsage and checkJSONUsage are check's and
// diff's help of --tp, --layers and --json.
const (
	checkTPUsage     = "tensor-parallel world size the capture ran at, for shard forensics, and the model runs at (not given: the model runs at 1 and the forensics try 2, 4, 8, 16)"
	checkLayersUsage = "layers expected in the capture, in order, as hsdb's decoder layer numbers whatever the file's format, e.g. 2,30,58,60"
	checkJSONUsage   = "print one JSON object per file (with --summary one for the path); a failure: one object with command, error and exit"
)

// flagUsage is the help text of the shared flag d in the subcommand
// whose flag set is named cmd: flagUsageFor's where it has one, else the
// table's.
func flagUsage(cmd string, d flagDef) string {
	if u, ok := flagUsageFor[cmd][d.name]; ok {
		return u
	}
	return d.usage
}
