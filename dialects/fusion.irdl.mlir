module {
  irdl.dialect @fusion {
    irdl.operation @group {
      %0 = irdl.any
      %1 = irdl.any
      %2 = irdl.any
      %3 = irdl.any
      %4 = irdl.any
      %5 = irdl.any
      %6 = irdl.any
      %7 = irdl.any
      %8 = irdl.any
      %9 = irdl.any
      %10 = irdl.any
      %11 = irdl.any
      %12 = irdl.any
      %13 = irdl.any
      %14 = irdl.any
      %15 = irdl.any
      irdl.operands(input0: optional %0, input1: optional %1, input2: optional %2, input3: optional %3, input4: optional %4, input5: optional %5, input6: optional %6, input7: optional %7, input8: optional %8, input9: optional %9, input10: optional %10, input11: optional %11, input12: optional %12, input13: optional %13, input14: optional %14, input15: optional %15)
      %16 = irdl.base "#builtin.string" 
      %17 = irdl.base "#builtin.string" 
      irdl.attributes {"kind" = %16, "label" = %17}
      %18 = irdl.any
      %19 = irdl.any
      %20 = irdl.any
      %21 = irdl.any
      %22 = irdl.any
      %23 = irdl.any
      %24 = irdl.any
      %25 = irdl.any
      irdl.results(output0: optional %18, output1: optional %19, output2: optional %20, output3: optional %21, output4: optional %22, output5: optional %23, output6: optional %24, output7: optional %25)
      %26 = irdl.region
      irdl.regions(body: %26)
    }
    irdl.operation @yield {
      %0 = irdl.any
      %1 = irdl.any
      %2 = irdl.any
      %3 = irdl.any
      %4 = irdl.any
      %5 = irdl.any
      %6 = irdl.any
      %7 = irdl.any
      irdl.operands(value0: optional %0, value1: optional %1, value2: optional %2, value3: optional %3, value4: optional %4, value5: optional %5, value6: optional %6, value7: optional %7)
    }
  }
}
