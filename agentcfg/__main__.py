from agentcfg.entry import main

raise SystemExit(main())
