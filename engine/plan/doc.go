// Package plan computes how much device memory a model needs per rank
// before anything is loaded: the weights as they will be kept (quantized
// weights at their stored size through model.QuantScheme, dense weights at
// the stored or --dtype dtype), the KV cache for a number of tokens, and the
// activation peak of one decoder layer. `hsdb plan` prints it and the
// loader refuses a load whose plan does not fit (engine.LoadSource), so the
// two cannot disagree.
//
// It reads only a module tree (model.Tree, built from config.json), the
// model's sizes (model.Dims) and, when weights are present, tensor headers
// (model.WeightSource.Meta). It must not import engine, a backend or
// anything above them.
package plan
