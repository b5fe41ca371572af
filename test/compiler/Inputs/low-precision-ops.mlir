// The model of low-precision-ops.test, with DT for the element type: one
// op a result, so that the 16-bit model (computed in f32, rounded once) is
// within one 16-bit ulp of the f32 model.
func.func @ops(%x: tensor<2x3x4x4xDT> {graph.input = "x"},
               %y: tensor<2x3x4x4xDT> {graph.input = "y"},
               %p: tensor<2x3x4x4xDT> {graph.input = "p"},
               %c: tensor<3xDT> {graph.input = "c"},
               %idx: tensor<2x3x4x1xi64> {graph.input = "idx"})
    -> (tensor<2x3x4x4xDT> {graph.output = "gelu"}, tensor<2x3x4x4xDT> {graph.output = "clamp"},
        tensor<2x3x4x4xDT> {graph.output = "dropout"}, tensor<2x3x4x4xDT> {graph.output = "sqrt"},
        tensor<2x3x4x4xDT> {graph.output = "pow"}, tensor<2x3x4x4xDT> {graph.output = "div"},
        tensor<2x3x4x4xDT> {graph.output = "where"}, tensor<2x3x2x2xDT> {graph.output = "max_pool"},
        tensor<2x3x4x4xDT> {graph.output = "avg_pool"}, tensor<2x3x1x1xDT> {graph.output = "global_avg_pool"},
        tensor<2x3x4x4xDT> {graph.output = "batch_norm"}, tensor<2x3x4x4xDT> {graph.output = "log_softmax"},
        tensor<2x3x4x4xDT> {graph.output = "cumsum"}, tensor<2x3x4x2xDT> {graph.output = "top_k"},
        tensor<2x3x4x2xi64> {graph.output = "top_k_index"}, tensor<2x3x4x1xDT> {graph.output = "gather_elements"},
        tensor<2x3x4x4xDT> {graph.output = "scatter_add"}, tensor<2x3x4x4xDT> {graph.output = "trilu"},
        tensor<2x3x8x8xDT> {graph.output = "resize"}, tensor<2x3x6x6xDT> {graph.output = "pad"},
        tensor<DT> {graph.output = "mse_loss"}, tensor<2x3xDT> {graph.output = "reduce_mean"},
        tensor<2x3xDT> {graph.output = "reduce_max"}, tensor<2x3x4xi64> {graph.output = "arg_max"},
        tensor<2x3x4x4xDT> {graph.output = "iota"}) {
  %gelu = graph.gelu %x approximate = tanh : tensor<2x3x4x4xDT>
  %clamp = graph.clamp %x {min = -0.5 : f64, max = 0.7 : f64} : tensor<2x3x4x4xDT>
  %dropout = graph.dropout %x {ratio = 0.25 : f64, seed = 7 : i64, training} : tensor<2x3x4x4xDT>
  %sqrt = graph.sqrt %p : tensor<2x3x4x4xDT>
  %pow = graph.pow %p, %x : (tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %div = graph.div %x, %p : (tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %m = graph.compare gt, %x, %y : (tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xi1>
  %where = graph.where %m, %x, %y : (tensor<2x3x4x4xi1>, tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %max_pool = graph.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<2x3x4x4xDT>) -> tensor<2x3x2x2xDT>
  %avg_pool = graph.avg_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad
      : (tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %gap = graph.global_avg_pool %x : (tensor<2x3x4x4xDT>) -> tensor<2x3x1x1xDT>
  %bn = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64}
      : (tensor<2x3x4x4xDT>, tensor<3xDT>, tensor<3xDT>, tensor<3xDT>, tensor<3xDT>) -> tensor<2x3x4x4xDT>
  %ls = graph.log_softmax %x {axis = 3 : i64} : (tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %cs = graph.cumsum %x axis = 3 : (tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %tv, %ti = graph.top_k %x k = 2 axis = 3 : (tensor<2x3x4x4xDT>) -> (tensor<2x3x4x2xDT>, tensor<2x3x4x2xi64>)
  %ge = graph.gather_elements %x, %idx axis = 3 : (tensor<2x3x4x4xDT>, tensor<2x3x4x1xi64>) -> tensor<2x3x4x1xDT>
  %upd = graph.slice %y starts = [0, 0, 0, 0] ends = [2, 3, 4, 1] steps = [1, 1, 1, 1]
      : (tensor<2x3x4x4xDT>) -> tensor<2x3x4x1xDT>
  %sc = graph.scatter_elements %x, %idx, %upd axis = 3 reduction = add
      : (tensor<2x3x4x4xDT>, tensor<2x3x4x1xi64>, tensor<2x3x4x1xDT>) -> tensor<2x3x4x4xDT>
  %tr = graph.trilu %x upper k = 1 : (tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  %rs = graph.resize %x scales = [1.0, 1.0, 2.0, 2.0] sizes = [-1, -1, -1, -1]
      mode = linear coordinate_mode = half_pixel nearest_mode = round_prefer_floor
      : (tensor<2x3x4x4xDT>) -> tensor<2x3x8x8xDT>
  %pad = graph.pad %x pads = [0, 0, 1, 1, 0, 0, 1, 1] mode = constant {value = 0.5 : f64}
      : (tensor<2x3x4x4xDT>) -> tensor<2x3x6x6xDT>
  %mse = graph.mse_loss %x, %y reduction = mean : (tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>) -> tensor<DT>
  %rm = graph.reduce_mean %x axes = [2, 3] : (tensor<2x3x4x4xDT>) -> tensor<2x3xDT>
  %rx = graph.reduce_max %x axes = [2, 3] : (tensor<2x3x4x4xDT>) -> tensor<2x3xDT>
  %am = graph.arg_max %x axis = 3 : (tensor<2x3x4x4xDT>) -> tensor<2x3x4xi64>
  %io = graph.iota [2, 3, 4, 4] axis = 3 : DT
  %iota = graph.add %io, %x : (tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>) -> tensor<2x3x4x4xDT>
  return %gelu, %clamp, %dropout, %sqrt, %pow, %div, %where, %max_pool, %avg_pool, %gap, %bn, %ls,
         %cs, %tv, %ti, %ge, %sc, %tr, %rs, %pad, %mse, %rm, %rx, %am, %iota
      : tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>,
        tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>, tensor<2x3x2x2xDT>,
        tensor<2x3x4x4xDT>, tensor<2x3x1x1xDT>, tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>,
        tensor<2x3x4x4xDT>, tensor<2x3x4x2xDT>, tensor<2x3x4x2xi64>, tensor<2x3x4x1xDT>,
        tensor<2x3x4x4xDT>, tensor<2x3x4x4xDT>, tensor<2x3x8x8xDT>, tensor<2x3x6x6xDT>,
        tensor<DT>, tensor<2x3xDT>, tensor<2x3xDT>, tensor<2x3x4xi64>, tensor<2x3x4x4xDT>
}
