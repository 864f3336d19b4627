module {
  irdl.dialect @fusion {
    irdl.operation @group {
      %0 = irdl.any
      irdl.operands(inputs: variadic %0)
      %1 = irdl.base "#builtin.string" 
      %2 = irdl.base "#builtin.string" 
      irdl.attributes {"kind" = %1, "label" = %2}
      %3 = irdl.any
      irdl.results(outputs: variadic %3)
      %4 = irdl.region
      irdl.regions(body: %4)
    }
    irdl.operation @yield {
      %0 = irdl.any
      irdl.operands(values: variadic %0)
    }
  }
}
