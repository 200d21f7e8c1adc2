add_test([=[AliasBarriers.SplitHeadsOfAGemmOutput]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=AliasBarriers.SplitHeadsOfAGemmOutput]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[AliasBarriers.SplitHeadsOfAGemmOutput]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_alias_barriers.cpp:53]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[AliasBarriers.MergedAndSplitDims]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=AliasBarriers.MergedAndSplitDims]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[AliasBarriers.MergedAndSplitDims]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_alias_barriers.cpp:67]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[AliasBarriers.NoCommonShapeOrAnOffset]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=AliasBarriers.NoCommonShapeOrAnOffset]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[AliasBarriers.NoCommonShapeOrAnOffset]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_alias_barriers.cpp:83]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[BarrierCoarsening.CausalPrefixesFitTheDstLimit]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=BarrierCoarsening.CausalPrefixesFitTheDstLimit]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[BarrierCoarsening.CausalPrefixesFitTheDstLimit]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_coarsen.cpp:46]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CopyIType.SrcForViews]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CopyIType.SrcForViews]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CopyIType.SrcForViews]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:94]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CopyIType.OpNamesOfTheCustomOps]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CopyIType.OpNamesOfTheCustomOps]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CopyIType.OpNamesOfTheCustomOps]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:105]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CopyIType.ConsumersOfOneViewShareItsCopy]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CopyIType.ConsumersOfOneViewShareItsCopy]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CopyIType.ConsumersOfOneViewShareItsCopy]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:111]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CopyIType.CastTransposeAndBroadcastMatchNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CopyIType.CastTransposeAndBroadcastMatchNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CopyIType.CastTransposeAndBroadcastMatchNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:130]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CopyIType.IntegerOutputsAreRefused]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CopyIType.IntegerOutputsAreRefused]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CopyIType.IntegerOutputsAreRefused]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:162]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CopyIType.CrossDeviceCopyIsRefused]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CopyIType.CrossDeviceCopyIsRefused]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CopyIType.CrossDeviceCopyIsRefused]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:171]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[EmbeddingIType.GathersRows]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=EmbeddingIType.GathersRows]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[EmbeddingIType.GathersRows]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:191]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[EmbeddingIType.OutOfRangeIdsRaise]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=EmbeddingIType.OutOfRangeIdsRaise]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[EmbeddingIType.OutOfRangeIdsRaise]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:207]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[EmbeddingIType.FloatIdsAreRefused]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=EmbeddingIType.FloatIdsAreRefused]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[EmbeddingIType.FloatIdsAreRefused]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:221]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CatIType.JoinsAlongLastAndFirstDim]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CatIType.JoinsAlongLastAndFirstDim]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CatIType.JoinsAlongLastAndFirstDim]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:229]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[CatIType.ValidateNamesShapes]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=CatIType.ValidateNamesShapes]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[CatIType.ValidateNamesShapes]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:256]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RowReduceIType.MeanAndSumOverTheLastDim]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RowReduceIType.MeanAndSumOverTheLastDim]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RowReduceIType.MeanAndSumOverTheLastDim]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:266]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RowReduceIType.OtherDimsAreRefused]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RowReduceIType.OtherDimsAreRefused]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RowReduceIType.OtherDimsAreRefused]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:288]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRepeatKv.SdpaReadsTheUnrepeatedHeads]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRepeatKv.SdpaReadsTheUnrepeatedHeads]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRepeatKv.SdpaReadsTheUnrepeatedHeads]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:322]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRepeatKv.OtherUsersKeepTheRepeat]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRepeatKv.OtherUsersKeepTheRepeat]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRepeatKv.OtherUsersKeepTheRepeat]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_data_itypes.cpp:337]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRMSNorm.FunctionalForm]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRMSNorm.FunctionalForm]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRMSNorm.FunctionalForm]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:63]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRMSNorm.LlamaForm]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRMSNorm.LlamaForm]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRMSNorm.LlamaForm]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:70]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRMSNorm.GptFastForm]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRMSNorm.GptFastForm]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRMSNorm.GptFastForm]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:77]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRMSNorm.SquareOfAnotherTensorIsLeftAlone]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRMSNorm.SquareOfAnotherTensorIsLeftAlone]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRMSNorm.SquareOfAnotherTensorIsLeftAlone]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:84]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRMSNorm.WithoutWeight]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRMSNorm.WithoutWeight]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRMSNorm.WithoutWeight]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:92]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRMSNorm.SharedIntermediateIsLeftAlone]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRMSNorm.SharedIntermediateIsLeftAlone]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRMSNorm.SharedIntermediateIsLeftAlone]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:98]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRope.Fp32FormWithCasts]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRope.Fp32FormWithCasts]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRope.Fp32FormWithCasts]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:165]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRope.PlainFormOperandsSwapped]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRope.PlainFormOperandsSwapped]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRope.PlainFormOperandsSwapped]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:173]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseRope.WrongHalvesAndSharedIntermediatesAreLeftAlone]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseRope.WrongHalvesAndSharedIntermediatesAreLeftAlone]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseRope.WrongHalvesAndSharedIntermediatesAreLeftAlone]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:182]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseResidual.AddBecomesTheGemmsFullBias]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseResidual.AddBecomesTheGemmsFullBias]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseResidual.AddBecomesTheGemmsFullBias]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:229]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseResidual.OtherUsersOfTheProductKeepTheAdd]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseResidual.OtherUsersOfTheProductKeepTheAdd]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseResidual.OtherUsersOfTheProductKeepTheAdd]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:237]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseSwiglu.GateAndUpBecomeOneGemm]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseSwiglu.GateAndUpBecomeOneGemm]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseSwiglu.GateAndUpBecomeOneGemm]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:263]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseSwiglu.OtherInputsOrUsersAreLeftAlone]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseSwiglu.OtherInputsOrUsersAreLeftAlone]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseSwiglu.OtherInputsOrUsersAreLeftAlone]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:271]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseElementwise.ChainOfTwentyOpsIsOneInstructionType]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseElementwise.ChainOfTwentyOpsIsOneInstructionType]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseElementwise.ChainOfTwentyOpsIsOneInstructionType]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:291]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseElementwise.SharedOrViewedIntermediatesStay]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseElementwise.SharedOrViewedIntermediatesStay]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseElementwise.SharedOrViewedIntermediatesStay]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:314]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseElementwise.AtMostTwoOuterInputsAndBroadcastMasks]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseElementwise.AtMostTwoOuterInputsAndBroadcastMasks]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseElementwise.AtMostTwoOuterInputsAndBroadcastMasks]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:335]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseElementwise.IntermediatesStayFp32ExceptFloat16]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseElementwise.IntermediatesStayFp32ExceptFloat16]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseElementwise.IntermediatesStayFp32ExceptFloat16]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:352]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[FuseElementwise.ConstructorChecksItsSteps]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=FuseElementwise.ConstructorChecksItsSteps]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[FuseElementwise.ConstructorChecksItsSteps]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_fuse.cpp:369]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.ChainCorrectOverSeedsAndModes]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.ChainCorrectOverSeedsAndModes]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.ChainCorrectOverSeedsAndModes]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:130]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.ReuseChainCorrect]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.ReuseChainCorrect]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.ReuseChainCorrect]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:142]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.MissingInputBarrierIsCaught]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.MissingInputBarrierIsCaught]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.MissingInputBarrierIsCaught]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:156]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.MissingReuseBarrierIsCaught]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.MissingReuseBarrierIsCaught]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.MissingReuseBarrierIsCaught]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:182]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.UnreachedTargetDeadlocks]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.UnreachedTargetDeadlocks]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.UnreachedTargetDeadlocks]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:197]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.ExtraArrivalIsInternalError]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.ExtraArrivalIsInternalError]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.ExtraArrivalIsInternalError]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:216]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.PerSmOrderRespected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.PerSmOrderRespected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.PerSmOrderRespected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:223]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.SeedsVaryTheOrder]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.SeedsVaryTheOrder]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.SeedsVaryTheOrder]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:241]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.NoopPaddingAndSkew]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.NoopPaddingAndSkew]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.NoopPaddingAndSkew]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:255]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.OutOfBoundsBoxNamesInstruction]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.OutOfBoundsBoxNamesInstruction]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.OutOfBoundsBoxNamesInstruction]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:269]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Interp.BufferCountChecked]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Interp.BufferCountChecked]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Interp.BufferCountChecked]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:281]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[InterpMemory.Bf16RoundsToNearestEven]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=InterpMemory.Bf16RoundsToNearestEven]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[InterpMemory.Bf16RoundsToNearestEven]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:288]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[InterpMemory.F16RoundsToNearestEven]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=InterpMemory.F16RoundsToNearestEven]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[InterpMemory.F16RoundsToNearestEven]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_interpreter.cpp:299]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ITypeNames.OpNames]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ITypeNames.OpNames]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ITypeNames.OpNames]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:195]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ITypeNames.Params]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ITypeNames.Params]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ITypeNames.Params]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:203]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ITypeNames.UnknownOpsListSupported]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ITypeNames.UnknownOpsListSupported]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ITypeNames.UnknownOpsListSupported]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:216]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ITypeNames.InplaceInput]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ITypeNames.InplaceInput]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ITypeNames.InplaceInput]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:230]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.TilingCounts]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.TilingCounts]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.TilingCounts]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:238]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.IndicesCarryBackingOrigins]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.IndicesCarryBackingOrigins]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.IndicesCarryBackingOrigins]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:283]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.ValidateNamesNodeAndValue]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.ValidateNamesNodeAndValue]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.ValidateNamesNodeAndValue]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:301]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.ExecuteUnaryMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.ExecuteUnaryMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.ExecuteUnaryMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:329]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.ExecuteNewUnaryOpsMatchStd]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.ExecuteNewUnaryOpsMatchStd]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.ExecuteNewUnaryOpsMatchStd]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:354]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.ScalarStepsParseAndParams]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.ScalarStepsParseAndParams]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.ScalarStepsParseAndParams]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:398]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.ScalarStepSemantics]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.ScalarStepSemantics]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.ScalarStepSemantics]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:422]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.ExecuteBinaryMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.ExecuteBinaryMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.ExecuteBinaryMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:449]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseIType.InplaceFormOnAViewWritesOutputCoords]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseIType.InplaceFormOnAViewWritesOutputCoords]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseIType.InplaceFormOnAViewWritesOutputCoords]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:473]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseBroadcast.MasksAndParams]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseBroadcast.MasksAndParams]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseBroadcast.MasksAndParams]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:495]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseBroadcast.IndicesAndRegions]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseBroadcast.IndicesAndRegions]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseBroadcast.IndicesAndRegions]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:529]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ElementwiseBroadcast.ExecuteMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ElementwiseBroadcast.ExecuteMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ElementwiseBroadcast.ExecuteMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:588]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RMSNormIType.Tiling]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RMSNormIType.Tiling]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RMSNormIType.Tiling]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:642]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RMSNormIType.BalancedTiles]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RMSNormIType.BalancedTiles]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RMSNormIType.BalancedTiles]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:666]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RMSNormIType.Validate]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RMSNormIType.Validate]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RMSNormIType.Validate]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:687]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RMSNormIType.ExecuteMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RMSNormIType.ExecuteMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RMSNormIType.ExecuteMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:700]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RopeIType.TilingCountsAndIndices]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RopeIType.TilingCountsAndIndices]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RopeIType.TilingCountsAndIndices]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:728]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RopeIType.ValidateNamesNodeAndValue]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RopeIType.ValidateNamesNodeAndValue]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RopeIType.ValidateNamesNodeAndValue]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:792]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[RopeIType.ExecuteMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=RopeIType.ExecuteMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[RopeIType.ExecuteMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:822]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.H200NarrowTilesUnderOneWave]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.H200NarrowTilesUnderOneWave]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.H200NarrowTilesUnderOneWave]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:881]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.TileWidthOfGemmsSharingA]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.TileWidthOfGemmsSharingA]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.TileWidthOfGemmsSharingA]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:900]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.SplitKDecision]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.SplitKDecision]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.SplitKDecision]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:916]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.ActivationFlag]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.ActivationFlag]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.ActivationFlag]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:945]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.RopeFlag]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.RopeFlag]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.RopeFlag]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:958]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.SeedMlpOnB200]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.SeedMlpOnB200]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.SeedMlpOnB200]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:997]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.H200OwnRows]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.H200OwnRows]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.H200OwnRows]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1021]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.RaggedAndSupergroups]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.RaggedAndSupergroups]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.RaggedAndSupergroups]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1031]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.EmptyRankReadsOnlyB]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.EmptyRankReadsOnlyB]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.EmptyRankReadsOnlyB]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1051]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.Validate]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.Validate]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.Validate]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1072]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.ExecuteMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.ExecuteMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.ExecuteMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1113]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.FlagParams]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.FlagParams]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.FlagParams]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1147]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.TransposedIndicesAndRegions]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.TransposedIndicesAndRegions]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.TransposedIndicesAndRegions]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1167]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.PlainIndexLayoutUnchanged]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.PlainIndexLayoutUnchanged]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.PlainIndexLayoutUnchanged]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1201]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.FlagValidation]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.FlagValidation]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.FlagValidation]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1209]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.OtherITypesRejectTransposedViews]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.OtherITypesRejectTransposedViews]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.OtherITypesRejectTransposedViews]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1252]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[GemmIType.ExecuteFlagsMatchNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=GemmIType.ExecuteFlagsMatchNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[GemmIType.ExecuteFlagsMatchNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1298]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[AttentionIType.Tiling]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=AttentionIType.Tiling]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[AttentionIType.Tiling]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1332]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[AttentionIType.Validate]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=AttentionIType.Validate]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[AttentionIType.Validate]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1375]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[AttentionIType.ExecuteMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=AttentionIType.ExecuteMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[AttentionIType.ExecuteMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1413]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ITypeCompare.NaNFails]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ITypeCompare.NaNFails]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ITypeCompare.NaNFails]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_itypes.cpp:1470]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Pipeline.MlpMatchesNaiveUnderRandomInterleavings]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Pipeline.MlpMatchesNaiveUnderRandomInterleavings]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Pipeline.MlpMatchesNaiveUnderRandomInterleavings]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_pipeline.cpp:92]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Pipeline.MlpOnTheSeedProfileMatchesNaive]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Pipeline.MlpOnTheSeedProfileMatchesNaive]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Pipeline.MlpOnTheSeedProfileMatchesNaive]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_pipeline.cpp:104]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Pipeline.EveryDroppedInputBarrierIsCaught]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Pipeline.EveryDroppedInputBarrierIsCaught]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Pipeline.EveryDroppedInputBarrierIsCaught]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_pipeline.cpp:113]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Runtime.Sha256KnownVectors]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Runtime.Sha256KnownVectors]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Runtime.Sha256KnownVectors]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_runtime.cpp:14]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Runtime.TreeDigestChangesWhenAHeaderChanges]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Runtime.TreeDigestChangesWhenAHeaderChanges]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Runtime.TreeDigestChangesWhenAHeaderChanges]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_runtime.cpp:20]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Runtime.CacheRoundTrip]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Runtime.CacheRoundTrip]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Runtime.CacheRoundTrip]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_runtime.cpp:33]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ScheduleGolden.SeedMlpCountsSlotsAndBarriers]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ScheduleGolden.SeedMlpCountsSlotsAndBarriers]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ScheduleGolden.SeedMlpCountsSlotsAndBarriers]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_schedule.cpp:47]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[ScheduleGolden.OneIcodePerIType]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=ScheduleGolden.OneIcodePerIType]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[ScheduleGolden.OneIcodePerIType]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_schedule.cpp:110]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Schedule.H200ProfileAndClusterPadding]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Schedule.H200ProfileAndClusterPadding]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Schedule.H200ProfileAndClusterPadding]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_schedule.cpp:118]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Schedule.RejectsOddSmCountWithClusters]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Schedule.RejectsOddSmCountWithClusters]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Schedule.RejectsOddSmCountWithClusters]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_schedule.cpp:135]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Schedule.InstructionIsExactly256Bytes]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Schedule.InstructionIsExactly256Bytes]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Schedule.InstructionIsExactly256Bytes]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_schedule.cpp:146]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.SeedMlp]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.SeedMlp]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.SeedMlp]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:44]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.SliceWithStartEnd]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.SliceWithStartEnd]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.SliceWithStartEnd]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:76]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.SliceToEndUsesInt64Max]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.SliceToEndUsesInt64Max]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.SliceToEndUsesInt64Max]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:90]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.SliceStepRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.SliceStepRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.SliceStepRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:100]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.SelectOutOfRangeNamesViewNode]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.SelectOutOfRangeNamesViewNode]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.SelectOutOfRangeNamesViewNode]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:109]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.UnsupportedOpRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.UnsupportedOpRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.UnsupportedOpRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:118]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.ScalarOperandRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.ScalarOperandRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.ScalarOperandRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:126]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.NewUnaryOps]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.NewUnaryOps]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.NewUnaryOps]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:161]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.ScalarOperands]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.ScalarOperands]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.ScalarOperands]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:180]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.RsubTensorSwapsOperands]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.RsubTensorSwapsOperands]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.RsubTensorSwapsOperands]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:219]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.ScalarConstantsAreParams]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.ScalarConstantsAreParams]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.ScalarConstantsAreParams]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:233]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.ScalarFormErrors]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.ScalarFormErrors]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.ScalarFormErrors]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:245]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.CustomUnaryScalarForms]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.CustomUnaryScalarForms]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.CustomUnaryScalarForms]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:276]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.UnknownKwargRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.UnknownKwargRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.UnknownKwargRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:291]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.SubAlphaAndDivRoundingMode]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.SubAlphaAndDivRoundingMode]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.SubAlphaAndDivRoundingMode]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:300]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.NonContiguousInputRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.NonContiguousInputRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.NonContiguousInputRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:317]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.Rank5InputRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.Rank5InputRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.Rank5InputRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:326]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.ZeroSizeTensorsRejectedByNode]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.ZeroSizeTensorsRejectedByNode]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.ZeroSizeTensorsRejectedByNode]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:334]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.NonTensorPlaceholderRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.NonTensorPlaceholderRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.NonTensorPlaceholderRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:346]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.ViewInFrontOfOutputStaysOnTheEdge]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.ViewInFrontOfOutputStaysOnTheEdge]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.ViewInFrontOfOutputStaysOnTheEdge]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:356]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.NoneOutputRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.NoneOutputRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.NoneOutputRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:369]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.NoTensorOutputRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.NoTensorOutputRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.NoTensorOutputRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:378]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.BackwardGraphRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.BackwardGraphRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.BackwardGraphRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:385]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.MultiOutputKeepsOutput0]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.MultiOutputKeepsOutput0]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.MultiOutputKeepsOutput0]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:414]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.DroppedOutputRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.DroppedOutputRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.DroppedOutputRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:428]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.RmsNormDefaultEpsAndShape]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.RmsNormDefaultEpsAndShape]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.RmsNormDefaultEpsAndShape]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:432]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.AttentionVariants]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.AttentionVariants]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.AttentionVariants]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:447]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.AttentionReadsBshdViewsInPlace]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.AttentionReadsBshdViewsInPlace]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.AttentionReadsBshdViewsInPlace]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:466]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.CustomOps]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.CustomOps]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.CustomOps]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:484]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.AddmmIsGemmWithBias]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.AddmmIsGemmWithBias]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.AddmmIsGemmWithBias]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:501]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.AddmmBetaAlphaOtherThanOneRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.AddmmBetaAlphaOtherThanOneRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.AddmmBetaAlphaOtherThanOneRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:536]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.AutoFunctionalizedV2Unwrapped]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.AutoFunctionalizedV2Unwrapped]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.AutoFunctionalizedV2Unwrapped]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:574]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.AutoFunctionalizedV2ViewOfBaseRejected]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.AutoFunctionalizedV2ViewOfBaseRejected]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.AutoFunctionalizedV2ViewOfBaseRejected]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:589]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[Trace.DeadNodePruned]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=Trace.DeadNodePruned]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[Trace.DeadNodePruned]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_trace.cpp:595]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TensorRangeViews.PermuteReordersViewDimsOnly]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TensorRangeViews.PermuteReordersViewDimsOnly]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TensorRangeViews.PermuteReordersViewDimsOnly]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:39]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TensorRangeViews.SelectThenTranspose]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TensorRangeViews.SelectThenTranspose]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TensorRangeViews.SelectThenTranspose]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:55]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TensorRangeViews.SliceAndSelectAfterPermute]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TensorRangeViews.SliceAndSelectAfterPermute]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TensorRangeViews.SliceAndSelectAfterPermute]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:67]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TensorRangeViews.IsFullNeedsStraightLayout]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TensorRangeViews.IsFullNeedsStraightLayout]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TensorRangeViews.IsFullNeedsStraightLayout]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:84]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TensorRangeViews.ExpandBroadcastsSizeOneDims]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TensorRangeViews.ExpandBroadcastsSizeOneDims]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TensorRangeViews.ExpandBroadcastsSizeOneDims]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:95]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TensorRangeViews.PermuteRejectsNonPermutations]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TensorRangeViews.PermuteRejectsNonPermutations]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TensorRangeViews.PermuteRejectsNonPermutations]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:143]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.MmWithPermutedWeight]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.MmWithPermutedWeight]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.MmWithPermutedWeight]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:153]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.TransposeBothOperandsWithT]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.TransposeBothOperandsWithT]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.TransposeBothOperandsWithT]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:172]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.SelectThenTOnStackedWeights]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.SelectThenTOnStackedWeights]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.SelectThenTOnStackedWeights]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:185]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.SliceThenTAndTThenSlice]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.SliceThenTAndTThenSlice]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.SliceThenTAndTThenSlice]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:201]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.BmmThroughNoOpExpandAndView]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.BmmThroughNoOpExpandAndView]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.BmmThroughNoOpExpandAndView]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:222]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.BatchPermutedGemmOperandIsCopied]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.BatchPermutedGemmOperandIsCopied]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.BatchPermutedGemmOperandIsCopied]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:244]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.TransposedViewInFrontOfOutputIsStrided]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.TransposedViewInFrontOfOutputIsStrided]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.TransposedViewInFrontOfOutputIsStrided]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:271]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.ReshapeIsAnAliasOfAContiguousRun]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.ReshapeIsAnAliasOfAContiguousRun]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.ReshapeIsAnAliasOfAContiguousRun]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:290]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.BroadcastViewOnlyForBinaryOps]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.BroadcastViewOnlyForBinaryOps]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.BroadcastViewOnlyForBinaryOps]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:326]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.BinaryOpsBroadcastImplicitlyAndThroughExpand]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.BinaryOpsBroadcastImplicitlyAndThroughExpand]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.BinaryOpsBroadcastImplicitlyAndThroughExpand]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:354]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.BadPermuteNamesNode]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.BadPermuteNamesNode]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.BadPermuteNamesNode]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:383]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
add_test([=[TraceViews.FoldedShapeCheckedAgainstGraph]=]  /work/main/build-tests/mk_tests [==[--gtest_filter=TraceViews.FoldedShapeCheckedAgainstGraph]==] --gtest_also_run_disabled_tests)
set_tests_properties([=[TraceViews.FoldedShapeCheckedAgainstGraph]=]
  PROPERTIES
    
    DEF_SOURCE_LINE [==[/work/main/tests/cpp/test_views.cpp:396]==]
    WORKING_DIRECTORY [==[/work/main/build-tests]==]
    SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==]
    
)
set(mk_tests_TESTS [==[AliasBarriers.SplitHeadsOfAGemmOutput]==] [==[AliasBarriers.MergedAndSplitDims]==] [==[AliasBarriers.NoCommonShapeOrAnOffset]==] [==[BarrierCoarsening.CausalPrefixesFitTheDstLimit]==] [==[CopyIType.SrcForViews]==] [==[CopyIType.OpNamesOfTheCustomOps]==] [==[CopyIType.ConsumersOfOneViewShareItsCopy]==] [==[CopyIType.CastTransposeAndBroadcastMatchNaive]==] [==[CopyIType.IntegerOutputsAreRefused]==] [==[CopyIType.CrossDeviceCopyIsRefused]==] [==[EmbeddingIType.GathersRows]==] [==[EmbeddingIType.OutOfRangeIdsRaise]==] [==[EmbeddingIType.FloatIdsAreRefused]==] [==[CatIType.JoinsAlongLastAndFirstDim]==] [==[CatIType.ValidateNamesShapes]==] [==[RowReduceIType.MeanAndSumOverTheLastDim]==] [==[RowReduceIType.OtherDimsAreRefused]==] [==[FuseRepeatKv.SdpaReadsTheUnrepeatedHeads]==] [==[FuseRepeatKv.OtherUsersKeepTheRepeat]==] [==[FuseRMSNorm.FunctionalForm]==] [==[FuseRMSNorm.LlamaForm]==] [==[FuseRMSNorm.GptFastForm]==] [==[FuseRMSNorm.SquareOfAnotherTensorIsLeftAlone]==] [==[FuseRMSNorm.WithoutWeight]==] [==[FuseRMSNorm.SharedIntermediateIsLeftAlone]==] [==[FuseRope.Fp32FormWithCasts]==] [==[FuseRope.PlainFormOperandsSwapped]==] [==[FuseRope.WrongHalvesAndSharedIntermediatesAreLeftAlone]==] [==[FuseResidual.AddBecomesTheGemmsFullBias]==] [==[FuseResidual.OtherUsersOfTheProductKeepTheAdd]==] [==[FuseSwiglu.GateAndUpBecomeOneGemm]==] [==[FuseSwiglu.OtherInputsOrUsersAreLeftAlone]==] [==[FuseElementwise.ChainOfTwentyOpsIsOneInstructionType]==] [==[FuseElementwise.SharedOrViewedIntermediatesStay]==] [==[FuseElementwise.AtMostTwoOuterInputsAndBroadcastMasks]==] [==[FuseElementwise.IntermediatesStayFp32ExceptFloat16]==] [==[FuseElementwise.ConstructorChecksItsSteps]==] [==[Interp.ChainCorrectOverSeedsAndModes]==] [==[Interp.ReuseChainCorrect]==] [==[Interp.MissingInputBarrierIsCaught]==] [==[Interp.MissingReuseBarrierIsCaught]==] [==[Interp.UnreachedTargetDeadlocks]==] [==[Interp.ExtraArrivalIsInternalError]==] [==[Interp.PerSmOrderRespected]==] [==[Interp.SeedsVaryTheOrder]==] [==[Interp.NoopPaddingAndSkew]==] [==[Interp.OutOfBoundsBoxNamesInstruction]==] [==[Interp.BufferCountChecked]==] [==[InterpMemory.Bf16RoundsToNearestEven]==] [==[InterpMemory.F16RoundsToNearestEven]==] [==[ITypeNames.OpNames]==] [==[ITypeNames.Params]==] [==[ITypeNames.UnknownOpsListSupported]==] [==[ITypeNames.InplaceInput]==] [==[ElementwiseIType.TilingCounts]==] [==[ElementwiseIType.IndicesCarryBackingOrigins]==] [==[ElementwiseIType.ValidateNamesNodeAndValue]==] [==[ElementwiseIType.ExecuteUnaryMatchesNaive]==] [==[ElementwiseIType.ExecuteNewUnaryOpsMatchStd]==] [==[ElementwiseIType.ScalarStepsParseAndParams]==] [==[ElementwiseIType.ScalarStepSemantics]==] [==[ElementwiseIType.ExecuteBinaryMatchesNaive]==] [==[ElementwiseIType.InplaceFormOnAViewWritesOutputCoords]==] [==[ElementwiseBroadcast.MasksAndParams]==] [==[ElementwiseBroadcast.IndicesAndRegions]==] [==[ElementwiseBroadcast.ExecuteMatchesNaive]==] [==[RMSNormIType.Tiling]==] [==[RMSNormIType.BalancedTiles]==] [==[RMSNormIType.Validate]==] [==[RMSNormIType.ExecuteMatchesNaive]==] [==[RopeIType.TilingCountsAndIndices]==] [==[RopeIType.ValidateNamesNodeAndValue]==] [==[RopeIType.ExecuteMatchesNaive]==] [==[GemmIType.H200NarrowTilesUnderOneWave]==] [==[GemmIType.TileWidthOfGemmsSharingA]==] [==[GemmIType.SplitKDecision]==] [==[GemmIType.ActivationFlag]==] [==[GemmIType.RopeFlag]==] [==[GemmIType.SeedMlpOnB200]==] [==[GemmIType.H200OwnRows]==] [==[GemmIType.RaggedAndSupergroups]==] [==[GemmIType.EmptyRankReadsOnlyB]==] [==[GemmIType.Validate]==] [==[GemmIType.ExecuteMatchesNaive]==] [==[GemmIType.FlagParams]==] [==[GemmIType.TransposedIndicesAndRegions]==] [==[GemmIType.PlainIndexLayoutUnchanged]==] [==[GemmIType.FlagValidation]==] [==[GemmIType.OtherITypesRejectTransposedViews]==] [==[GemmIType.ExecuteFlagsMatchNaive]==] [==[AttentionIType.Tiling]==] [==[AttentionIType.Validate]==] [==[AttentionIType.ExecuteMatchesNaive]==] [==[ITypeCompare.NaNFails]==] [==[Pipeline.MlpMatchesNaiveUnderRandomInterleavings]==] [==[Pipeline.MlpOnTheSeedProfileMatchesNaive]==] [==[Pipeline.EveryDroppedInputBarrierIsCaught]==] [==[Runtime.Sha256KnownVectors]==] [==[Runtime.TreeDigestChangesWhenAHeaderChanges]==] [==[Runtime.CacheRoundTrip]==] [==[ScheduleGolden.SeedMlpCountsSlotsAndBarriers]==] [==[ScheduleGolden.OneIcodePerIType]==] [==[Schedule.H200ProfileAndClusterPadding]==] [==[Schedule.RejectsOddSmCountWithClusters]==] [==[Schedule.InstructionIsExactly256Bytes]==] [==[Trace.SeedMlp]==] [==[Trace.SliceWithStartEnd]==] [==[Trace.SliceToEndUsesInt64Max]==] [==[Trace.SliceStepRejected]==] [==[Trace.SelectOutOfRangeNamesViewNode]==] [==[Trace.UnsupportedOpRejected]==] [==[Trace.ScalarOperandRejected]==] [==[Trace.NewUnaryOps]==] [==[Trace.ScalarOperands]==] [==[Trace.RsubTensorSwapsOperands]==] [==[Trace.ScalarConstantsAreParams]==] [==[Trace.ScalarFormErrors]==] [==[Trace.CustomUnaryScalarForms]==] [==[Trace.UnknownKwargRejected]==] [==[Trace.SubAlphaAndDivRoundingMode]==] [==[Trace.NonContiguousInputRejected]==] [==[Trace.Rank5InputRejected]==] [==[Trace.ZeroSizeTensorsRejectedByNode]==] [==[Trace.NonTensorPlaceholderRejected]==] [==[Trace.ViewInFrontOfOutputStaysOnTheEdge]==] [==[Trace.NoneOutputRejected]==] [==[Trace.NoTensorOutputRejected]==] [==[Trace.BackwardGraphRejected]==] [==[Trace.MultiOutputKeepsOutput0]==] [==[Trace.DroppedOutputRejected]==] [==[Trace.RmsNormDefaultEpsAndShape]==] [==[Trace.AttentionVariants]==] [==[Trace.AttentionReadsBshdViewsInPlace]==] [==[Trace.CustomOps]==] [==[Trace.AddmmIsGemmWithBias]==] [==[Trace.AddmmBetaAlphaOtherThanOneRejected]==] [==[Trace.AutoFunctionalizedV2Unwrapped]==] [==[Trace.AutoFunctionalizedV2ViewOfBaseRejected]==] [==[Trace.DeadNodePruned]==] [==[TensorRangeViews.PermuteReordersViewDimsOnly]==] [==[TensorRangeViews.SelectThenTranspose]==] [==[TensorRangeViews.SliceAndSelectAfterPermute]==] [==[TensorRangeViews.IsFullNeedsStraightLayout]==] [==[TensorRangeViews.ExpandBroadcastsSizeOneDims]==] [==[TensorRangeViews.PermuteRejectsNonPermutations]==] [==[TraceViews.MmWithPermutedWeight]==] [==[TraceViews.TransposeBothOperandsWithT]==] [==[TraceViews.SelectThenTOnStackedWeights]==] [==[TraceViews.SliceThenTAndTThenSlice]==] [==[TraceViews.BmmThroughNoOpExpandAndView]==] [==[TraceViews.BatchPermutedGemmOperandIsCopied]==] [==[TraceViews.TransposedViewInFrontOfOutputIsStrided]==] [==[TraceViews.ReshapeIsAnAliasOfAContiguousRun]==] [==[TraceViews.BroadcastViewOnlyForBinaryOps]==] [==[TraceViews.BinaryOpsBroadcastImplicitlyAndThroughExpand]==] [==[TraceViews.BadPermuteNamesNode]==] [==[TraceViews.FoldedShapeCheckedAgainstGraph]==])
