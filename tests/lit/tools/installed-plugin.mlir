// An installed plugin (entry points of group `optimus_ir.plugins`; here a
// fake distribution, Inputs/installed-plugin/lit_fake_plugin-0.1.dist-info,
// put on the import path) is loaded by optimus-opt before -p is parsed:
// its pass runs with no --load-pass-plugin. Its broken second entry point
// is one warning, and optimus-opt goes on. OPTIMUS_PLUGINS=0 loads none.

// RUN: env PYTHONPATH=%S/Inputs/installed-plugin optimus-opt %s -p raise-fx,installed-fold-double-neg,dce --remarks --pass-statistics 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=ERR < %t.err
// RUN: env PYTHONPATH=%S/Inputs/installed-plugin OPTIMUS_PLUGINS=0 not optimus-opt %s -p installed-fold-double-neg 2>&1 | filecheck %s --check-prefix=OFF

// CHECK:      %x = fx.placeholder "x"
// CHECK-NEXT: %c = torch.tanh %x
// CHECK-NEXT: fx.output (%c,)

// ERR:      optimus-opt: warning: installed plugin 'broken' (= lit_fake_plugin:broken_setup, from distribution 'lit-fake-plugin') failed to load and is skipped: RuntimeError: this plugin is broken on purpose
// ERR:      'installed-fold-double-neg'
// ERR:        pattern installed-fold: tried {{[0-9]+}}, rewrote 1
// ERR:      installed-plugin.mlir:[[# @LINE + 9]]:5: remark: installed plugin folded neg(neg(x))

// OFF-NOT: warning
// OFF:     unknown pass 'installed-fold-double-neg'

builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
    %a = fx.call_function "torch.neg"(%x) : tensor<2x4xf32, "cpu">
    %b = fx.call_function "torch.neg"(%a) : tensor<2x4xf32, "cpu">
    %c = fx.call_function "torch.tanh"(%b) : tensor<2x4xf32, "cpu">
    fx.output (%c,)
  }
}
