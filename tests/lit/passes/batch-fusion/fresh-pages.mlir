// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default}' --split-input-file | filecheck %s
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default}' --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: optimus-opt %s -p 'batch-fusion{cost-model=default target=inductor}' --split-input-file --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=INDUCTOR

// Fresh pages (`CostModel.fresh_pages_seconds`): glibc maps blocks of 32 MiB
// and more afresh on every allocation and unmaps them when freed, so every
// call page-faults them in again (the default CPU model: from 32 MiB on,
// 0.5 ns a byte). A group whose one fused result would be that big is cut
// in chunks whose results are not, and the remark says so.

// 64 tanh of 512 KiB each: one fused result of 32 MiB, two of 16 MiB.

// CHECK-LABEL: fx.graph @fresh
// CHECK:         batch.pointwise {{.*}} fn "torch.tanh" {{.*}} -> tensor<32x256x512xf32, "cpu">
// CHECK:         batch.pointwise {{.*}} fn "torch.tanh" {{.*}} -> tensor<32x256x512xf32, "cpu">
// CHECK-NOT:     batch.pointwise
// REMARK: remark: batch-fusion: 64 torch.tanh (%r0, %r1, %r2, ...) cut in 2 chunks: one fused result of 32 MiB would take fresh pages from the allocator on every call (from 32 MiB on; ~16777.2 us), its chunks' do not
// REMARK: remark: batch-fusion: fused 32 torch.tanh (%r0, %r1, %r2, ...) into batch.pointwise
// REMARK: remark: batch-fusion: fused 32 torch.tanh (%r32, %r33, %r34, ...) into batch.pointwise

// For Inductor a group is never cut in chunks (`plan._choose_parts`): the
// chunks' results are joined again by a generated copy loop per piece, which
// Inductor compiles (at 1024 towers, 54.9 s against 31.6 s whole). Here the
// whole group does not pay, so it stays unfused.
// INDUCTOR-NOT: cut in
// INDUCTOR: remark: batch-fusion: 64 torch.tanh (%r0, %r1, %r2, ...) not fused: unprofitable: target inductor
// INDUCTOR-NOT: cut in
fx.graph @fresh {
  %x = fx.placeholder "x" : tensor<256x32768xf32, "cpu">
  %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18, %p19, %p20, %p21, %p22, %p23, %p24, %p25, %p26, %p27, %p28, %p29, %p30, %p31, %p32, %p33, %p34, %p35, %p36, %p37, %p38, %p39, %p40, %p41, %p42, %p43, %p44, %p45, %p46, %p47, %p48, %p49, %p50, %p51, %p52, %p53, %p54, %p55, %p56, %p57, %p58, %p59, %p60, %p61, %p62, %p63 = torch.split %x sections [512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512] dim 1 : tensor<256x32768xf32, "cpu"> -> tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">
  %r0 = torch.tanh %p0 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r1 = torch.tanh %p1 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r2 = torch.tanh %p2 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r3 = torch.tanh %p3 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r4 = torch.tanh %p4 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r5 = torch.tanh %p5 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r6 = torch.tanh %p6 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r7 = torch.tanh %p7 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r8 = torch.tanh %p8 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r9 = torch.tanh %p9 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r10 = torch.tanh %p10 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r11 = torch.tanh %p11 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r12 = torch.tanh %p12 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r13 = torch.tanh %p13 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r14 = torch.tanh %p14 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r15 = torch.tanh %p15 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r16 = torch.tanh %p16 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r17 = torch.tanh %p17 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r18 = torch.tanh %p18 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r19 = torch.tanh %p19 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r20 = torch.tanh %p20 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r21 = torch.tanh %p21 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r22 = torch.tanh %p22 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r23 = torch.tanh %p23 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r24 = torch.tanh %p24 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r25 = torch.tanh %p25 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r26 = torch.tanh %p26 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r27 = torch.tanh %p27 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r28 = torch.tanh %p28 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r29 = torch.tanh %p29 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r30 = torch.tanh %p30 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r31 = torch.tanh %p31 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r32 = torch.tanh %p32 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r33 = torch.tanh %p33 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r34 = torch.tanh %p34 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r35 = torch.tanh %p35 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r36 = torch.tanh %p36 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r37 = torch.tanh %p37 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r38 = torch.tanh %p38 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r39 = torch.tanh %p39 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r40 = torch.tanh %p40 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r41 = torch.tanh %p41 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r42 = torch.tanh %p42 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r43 = torch.tanh %p43 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r44 = torch.tanh %p44 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r45 = torch.tanh %p45 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r46 = torch.tanh %p46 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r47 = torch.tanh %p47 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r48 = torch.tanh %p48 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r49 = torch.tanh %p49 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r50 = torch.tanh %p50 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r51 = torch.tanh %p51 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r52 = torch.tanh %p52 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r53 = torch.tanh %p53 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r54 = torch.tanh %p54 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r55 = torch.tanh %p55 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r56 = torch.tanh %p56 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r57 = torch.tanh %p57 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r58 = torch.tanh %p58 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r59 = torch.tanh %p59 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r60 = torch.tanh %p60 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r61 = torch.tanh %p61 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r62 = torch.tanh %p62 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %r63 = torch.tanh %p63 : tensor<256x512xf32, "cpu"> -> tensor<256x512xf32, "cpu">
  %c = torch.cat %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22, %r23, %r24, %r25, %r26, %r27, %r28, %r29, %r30, %r31, %r32, %r33, %r34, %r35, %r36, %r37, %r38, %r39, %r40, %r41, %r42, %r43, %r44, %r45, %r46, %r47, %r48, %r49, %r50, %r51, %r52, %r53, %r54, %r55, %r56, %r57, %r58, %r59, %r60, %r61, %r62, %r63 dim 1 : tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu">, tensor<256x512xf32, "cpu"> -> tensor<256x32768xf32, "cpu">
  fx.output (%c)
}

// -----

// Left alone: 64 tanh of 256 KiB each, one fused result of 16 MiB: one group, no note.

// CHECK-LABEL: fx.graph @below
// CHECK:         batch.pointwise {{.*}} fn "torch.tanh" {{.*}} -> tensor<64x256x256xf32, "cpu">
// CHECK-NOT:     batch.pointwise
// REMARK-NOT: cut in
// REMARK: remark: batch-fusion: fused 64 torch.tanh (%r0, %r1, %r2, ...) into batch.pointwise
// REMARK-NOT: cut in
fx.graph @below {
  %x = fx.placeholder "x" : tensor<256x16384xf32, "cpu">
  %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18, %p19, %p20, %p21, %p22, %p23, %p24, %p25, %p26, %p27, %p28, %p29, %p30, %p31, %p32, %p33, %p34, %p35, %p36, %p37, %p38, %p39, %p40, %p41, %p42, %p43, %p44, %p45, %p46, %p47, %p48, %p49, %p50, %p51, %p52, %p53, %p54, %p55, %p56, %p57, %p58, %p59, %p60, %p61, %p62, %p63 = torch.split %x sections [256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256] dim 1 : tensor<256x16384xf32, "cpu"> -> tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">
  %r0 = torch.tanh %p0 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r1 = torch.tanh %p1 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r2 = torch.tanh %p2 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r3 = torch.tanh %p3 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r4 = torch.tanh %p4 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r5 = torch.tanh %p5 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r6 = torch.tanh %p6 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r7 = torch.tanh %p7 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r8 = torch.tanh %p8 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r9 = torch.tanh %p9 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r10 = torch.tanh %p10 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r11 = torch.tanh %p11 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r12 = torch.tanh %p12 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r13 = torch.tanh %p13 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r14 = torch.tanh %p14 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r15 = torch.tanh %p15 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r16 = torch.tanh %p16 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r17 = torch.tanh %p17 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r18 = torch.tanh %p18 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r19 = torch.tanh %p19 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r20 = torch.tanh %p20 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r21 = torch.tanh %p21 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r22 = torch.tanh %p22 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r23 = torch.tanh %p23 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r24 = torch.tanh %p24 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r25 = torch.tanh %p25 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r26 = torch.tanh %p26 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r27 = torch.tanh %p27 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r28 = torch.tanh %p28 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r29 = torch.tanh %p29 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r30 = torch.tanh %p30 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r31 = torch.tanh %p31 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r32 = torch.tanh %p32 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r33 = torch.tanh %p33 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r34 = torch.tanh %p34 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r35 = torch.tanh %p35 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r36 = torch.tanh %p36 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r37 = torch.tanh %p37 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r38 = torch.tanh %p38 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r39 = torch.tanh %p39 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r40 = torch.tanh %p40 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r41 = torch.tanh %p41 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r42 = torch.tanh %p42 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r43 = torch.tanh %p43 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r44 = torch.tanh %p44 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r45 = torch.tanh %p45 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r46 = torch.tanh %p46 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r47 = torch.tanh %p47 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r48 = torch.tanh %p48 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r49 = torch.tanh %p49 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r50 = torch.tanh %p50 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r51 = torch.tanh %p51 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r52 = torch.tanh %p52 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r53 = torch.tanh %p53 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r54 = torch.tanh %p54 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r55 = torch.tanh %p55 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r56 = torch.tanh %p56 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r57 = torch.tanh %p57 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r58 = torch.tanh %p58 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r59 = torch.tanh %p59 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r60 = torch.tanh %p60 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r61 = torch.tanh %p61 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r62 = torch.tanh %p62 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %r63 = torch.tanh %p63 : tensor<256x256xf32, "cpu"> -> tensor<256x256xf32, "cpu">
  %c = torch.cat %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22, %r23, %r24, %r25, %r26, %r27, %r28, %r29, %r30, %r31, %r32, %r33, %r34, %r35, %r36, %r37, %r38, %r39, %r40, %r41, %r42, %r43, %r44, %r45, %r46, %r47, %r48, %r49, %r50, %r51, %r52, %r53, %r54, %r55, %r56, %r57, %r58, %r59, %r60, %r61, %r62, %r63 dim 1 : tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu">, tensor<256x256xf32, "cpu"> -> tensor<256x16384xf32, "cpu">
  fx.output (%c)
}
