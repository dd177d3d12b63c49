package check

import (
	"fmt"

	"hsdb/inspect/capture"
)

// heldOrder is the order a file holds its layer entries in, which an
// EAGLE-3 trainer concatenates them in, and the words that say where it
// comes from: a list's or speculators' [seq, n_ids, hidden] entries in
// their own order (labels, the entries' layers in entry order); a file
// keyed by layer (hsdb's hidden_states.{layer}) in its metadata's layers,
// the order the capture listed them (Layout.Order); nil when the file
// itself records no order (keys without metadata, SpecForge's samples,
// unlabelled entries).
func heldOrder(l *Layout, labels []int) ([]int, string) {
	switch {
	case l.Keyed:
		if l.Order != nil {
			return l.Order, "the file's metadata records"
		}
		return nil, ""
	case l.Labelled:
		return labels, "the file holds"
	}
	return nil, ""
}

// manifestClash says how a dump manifest's layers (capture.layers, in
// the order it lists them) disagree with what the file itself records:
// its order where it records one (heldOrder), else its keys' layers as a
// set; "" when they agree, when the file records no layers, or outside a
// dump (manifest nil).
func manifestClash(l *Layout, labels, manifest []int) string {
	if manifest == nil || l.LabelsLost || !l.Labelled {
		return ""
	}
	if held, from := heldOrder(l, labels); held != nil {
		if joinInts(held) == joinInts(manifest) {
			return ""
		}
		how := "different layers"
		if sameSet(held, manifest) {
			how = "the same layers in another order"
		}
		return fmt.Sprintf("the dump's manifest records layers %s, %s layers %s: %s (the manifest and the file disagree on which layer each entry is)", joinInts(manifest), from, joinInts(held), how)
	}
	if !sameSet(labels, manifest) {
		return fmt.Sprintf("the dump's manifest records layers %s, the file's keys name layers %s", joinInts(manifest), joinInts(labels))
	}
	return ""
}

// layerCountRule judges --layers (opts.Layers; a dump's manifest layers
// when none is given) against the file's layer entries: their number, the
// layers they are labelled with, and the order the file holds them in
// (heldOrder, or for unlabelled entries of a dump the manifest's order),
// which EAGLE-3 trainers concatenate them in: the same layers in another
// order fail, naming both orders. A dump's manifest that disagrees with
// the file's own record fails first, naming both. formatIDs, asIDs and
// noLayersIDs are rulesFor's notes on speculators ids.
func layerCountRule(l *Layout, layered []Entry, opts CheckOptions, formatIDs, asIDs, noLayersIDs string) RuleResult {
	labels := entryLabels(layered)
	res := func(st capture.Status, format string, a ...any) RuleResult {
		return RuleResult{Rule: capture.RuleLayerCount, Status: st, Detail: fmt.Sprintf(format, a...)}
	}
	req := joinInts(opts.Layers)
	held, from := heldOrder(l, labels)
	if held == nil && !l.Labelled && opts.ManifestLayers != nil && len(opts.ManifestLayers) == len(layered) {
		held, from = opts.ManifestLayers, "the dump's manifest records"
	}
	clash := manifestClash(l, labels, opts.ManifestLayers)
	switch {
	case len(opts.Layers) == 0:
		return res(capture.Skip, "no --layers requested (%d entr%s%s%s)", len(l.Entries), ies(len(l.Entries)), labelNote(labels), noLayersIDs)
	case l.LabelsLost:
		return res(capture.Skip, "%d entr%s whose layers the file's metadata does not tell (see structure): not matched to --layers %s by position", len(layered), ies(len(layered)), req)
	case clash != "":
		return res(capture.Fail, "%s", clash)
	case len(layered) != len(opts.Layers):
		return res(capture.Fail, "%d layer entr%s, %d layer%s requested (%s)%s%s", len(layered), ies(len(layered)), len(opts.Layers), plural(len(opts.Layers)), req, countDiff(l.Labelled, labels, opts.Layers), formatIDs)
	case l.Labelled && !sameSet(labels, opts.Layers):
		return res(capture.Fail, "labelled layers %s, requested %s%s", joinInts(labels), req, formatIDs)
	case held != nil && !sameSet(held, opts.Layers):
		return res(capture.Fail, "%s layers %s, requested %s%s", from, joinInts(held), req, formatIDs)
	case held != nil && joinInts(held) != req:
		return res(capture.Fail, "requested %s: the same layers in another order: %s %s in this order (the order a trainer concatenates them)%s", req, from, joinInts(held), formatIDs)
	}
	return res(capture.Pass, "%d layer%s: %s%s", len(opts.Layers), plural(len(opts.Layers)), req, asIDs)
}

// formatIDsClash says how a trainer-format dump's manifest contradicts
// itself: its layers (capture.layers) against the hsdb layers its
// format_layer_ids name, both in file order (SpecForge's SGLang id s is
// hsdb layer s; speculators' id k hsdb layer k-1, id 0 the embeddings, no
// layer). SpecForge's samples name no layers, so the manifest is all that
// tells their order. "" when they agree, or for hsdb's own format.
func formatIDsClash(c capture.CaptureInfo) string {
	var layers []int
	switch capture.Format(c.Format) {
	case capture.FormatSpecForge:
		layers = c.FormatIDs
	case capture.FormatSpeculators:
		for _, id := range c.FormatIDs {
			if id > 0 {
				layers = append(layers, id-1)
			}
		}
	default:
		return ""
	}
	if joinInts(layers) == joinInts(c.Layers) {
		return ""
	}
	return fmt.Sprintf("the manifest's layers %s are not its %s ids %s, which are hsdb layers %s in file order: the manifest contradicts itself on which layer each entry is", joinInts(c.Layers), c.Format, joinInts(c.FormatIDs), joinInts(layers))
}

// layersLost says that an hsdb-format dump manifest of layer captures
// (capture.what set: hsdb sets it only with the layers, Capturer.AddLayers)
// records no capture.layers, empty or null, so that nothing says which
// layers its files hold nor in which order; "" otherwise (a dump of site
// captures alone has neither, a trainer format's layers are checked by
// formatIDsClash).
func layersLost(c capture.CaptureInfo) string {
	if len(c.Layers) > 0 || c.What == "" || (c.Format != "" && capture.Format(c.Format) != capture.FormatHsdb) {
		return ""
	}
	return fmt.Sprintf("the manifest's capture.what is %q (layer captures) but its capture.layers is empty: the layers the files hold are not recorded", c.What)
}
